# The module graph of docs/design.md, checked at configure time (links) and by a test (includes).
#
#   core ← kernels, traces, network_models ← sim ← planner ← pipeline ← tools
#
# Each entry: a module and the modules it may depend on (its own folder implied). Libraries are
# lgreco_<module> (network_models: lgreco_network_models); kernels' JSON forms
# (lgreco_kernels_json) count as kernels. The planner may use the traces module's public HDF5
# layer (traces/hdf5.hpp) and nothing else of traces. No library may depend on tools. MPI (optional,
# cmake/LgrecoMpi.cmake) is a third-party dependency of pipeline only, and only its backend file
# pipeline/comm_mpi.cpp includes <mpi.h> (checked by check_layers.cmake).
set(LGRECO_LAYERS
  "core:"
  "kernels:core"
  "traces:core"
  "network_models:core"
  "sim:core,kernels,traces,network_models"
  "planner:core,kernels,network_models,sim,traces/hdf5.hpp"
  "pipeline:core,kernels,traces,network_models,sim,planner"
  "python:core,kernels,traces,network_models,sim,planner,pipeline"
  "tools:core,kernels,traces,network_models,sim,planner,pipeline"
)

# Allowed modules of `module` (a list; entries with a '/' are single headers).
function(lgreco_layer_allowed module out)
  foreach(entry ${LGRECO_LAYERS})
    string(REPLACE ":" ";" parts "${entry}")
    list(GET parts 0 name)
    if(name STREQUAL module)
      list(LENGTH parts n)
      set(allowed "")
      if(n GREATER 1)
        list(GET parts 1 deps)
        string(REPLACE "," ";" allowed "${deps}")
      endif()
      set(${out} ${allowed} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "lgreco layers: no rule for module '${module}'")
endfunction()

# Module of a library target, or "" for a third-party one.
function(lgreco_module_of target out)
  set(m "")
  if(target MATCHES "^lgreco_(core|core_base)$")
    set(m core)
  elseif(target MATCHES "^lgreco_kernels")
    set(m kernels)
  elseif(target MATCHES "^lgreco_(traces|network_models|sim|planner|pipeline)$")
    set(m ${CMAKE_MATCH_1})
  elseif(target STREQUAL "lgreco")
    set(m tools)
  endif()
  set(${out} ${m} PARENT_SCOPE)
endfunction()

# Fails configuration when a library's link closure reaches a module its layer does not allow.
function(lgreco_check_link_layers)
  foreach(target lgreco_core lgreco_kernels lgreco_kernels_json lgreco_traces lgreco_network_models lgreco_sim
                 lgreco_planner lgreco_pipeline)
    if(NOT TARGET ${target})
      continue()
    endif()
    lgreco_module_of(${target} module)
    lgreco_layer_allowed(${module} allowed)
    set(seen "")
    set(todo ${target})
    while(todo)
      list(POP_FRONT todo t)
      if(t IN_LIST seen OR NOT TARGET ${t})
        continue()
      endif()
      list(APPEND seen ${t})
      get_target_property(libs ${t} LINK_LIBRARIES)
      get_target_property(ilibs ${t} INTERFACE_LINK_LIBRARIES)
      foreach(dep ${libs} ${ilibs})
        if(NOT dep OR dep MATCHES "NOTFOUND$" OR dep MATCHES "^\\$<")
          continue()
        endif()
        lgreco_module_of(${dep} dmod)
        if(dmod AND NOT dmod STREQUAL module AND NOT dmod IN_LIST allowed)
          # A single allowed header of a module (planner → traces/hdf5.hpp) permits the link.
          set(header_ok FALSE)
          foreach(a ${allowed})
            if(a MATCHES "^${dmod}/")
              set(header_ok TRUE)
            endif()
          endforeach()
          if(NOT header_ok)
            message(FATAL_ERROR "lgreco layers: ${target} (${module}) links ${dep} (${dmod}) through ${t}; "
                                "${module} may depend on: ${allowed} (cmake/LgrecoLayers.cmake, docs/design.md)")
          endif()
        endif()
        list(APPEND todo ${dep})
      endforeach()
    endwhile()
  endforeach()
endfunction()
