"""lgreco's PyTorch side: record gradient traces, apply compression schedules in DDP, and re-plan
them online with lgreco's C++ planner (OnlineHook; needs the native module)."""
from .hook import ScheduleHook, TorchComm
from .trace import TraceError, TraceRecorder, read_trace
from .methods import Method, ScheduleError, parse_method, wire_bytes
from .online import OnlineHook
from .schedule import Schedule, make_schedule
from .tables import TablesError, read_tables_h5, write_tables_h5

__all__ = ["ScheduleHook", "TorchComm", "OnlineHook", "TraceRecorder", "read_trace", "Schedule", "ScheduleError",
           "Method", "parse_method", "wire_bytes", "make_schedule", "read_tables_h5", "write_tables_h5",
           "TraceError", "TablesError"]
