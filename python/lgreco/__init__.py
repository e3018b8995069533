"""lgreco's PyTorch side: record gradient traces and apply compression schedules in DDP."""
from .hook import ScheduleHook
from .trace import TraceRecorder, read_trace
from .methods import Method, ScheduleError, parse_method, wire_bytes
from .schedule import Schedule, make_schedule
from .tables import read_tables_h5, write_tables_h5

__all__ = ["ScheduleHook", "TraceRecorder", "read_trace", "Schedule", "ScheduleError", "Method", "parse_method", "wire_bytes",
           "make_schedule", "read_tables_h5", "write_tables_h5"]
