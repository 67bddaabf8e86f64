"""What dyndbg's adapter answers to `initialize`: a missing flag means the
feature is not supported, so every one dyndbg serves is named here."""
from __future__ import annotations

from enum import Enum


class ExceptionFilter(str, Enum):
    STEPPED = "stepped"          # dyndbg's default: raised where a stop is possible
    RAISED = "raised"            # `catch exception`: raised in any generated code
    POST_MORTEM = "postMortem"   # --post-mortem: the program failed through generated code
    BACKWARD = "backward"        # `catch backward`: a compiled graph's backward starts
    NAN = "nan"                  # `catch nan`: a compiled graph's node made a NaN or an Inf


EXCEPTION_FILTERS = [
    {"filter": ExceptionFilter.STEPPED.value, "default": True,
     "label": "Raised in generated code being stepped or holding a breakpoint",
     "description": "dyndbg's default: an exception raised where a stop is possible"},
    {"filter": ExceptionFilter.RAISED.value, "default": False,
     "label": "Raised in any generated code (catch exception)",
     "description": "every exception raised in dynamo-generated code, caught or not"},
    {"filter": ExceptionFilter.POST_MORTEM.value, "default": False,
     "label": "Uncaught: post mortem",
     "description": "after the program fails through generated code, stop at the failing "
                    "instruction (generated code runs traced to keep its stack)"},
    {"filter": ExceptionFilter.BACKWARD.value, "default": False,
     "label": "Compiled backward starts (catch backward)",
     "description": "stop before the first node (aot_eager) or kernel step (inductor) of a "
                    "compiled graph's backward inside loss.backward(), then step it"},
    {"filter": ExceptionFilter.NAN.value, "default": False,
     "label": "NaN or Inf in a compiled graph (catch nan)",
     "description": "stop right after the first node of a compiled graph (eager, aot_eager "
                    "forward) whose output holds a NaN or an Inf, then step its nodes"},
]

CAPABILITIES = {
    "supportsConfigurationDoneRequest": True,
    "supportsFunctionBreakpoints": True,
    "supportsConditionalBreakpoints": True,
    "supportsHitConditionalBreakpoints": True,
    "supportsDisassembleRequest": True,
    "supportsSteppingGranularity": True,
    "supportsInstructionBreakpoints": True,
    "supportsExceptionInfoRequest": True,
    "supportsLoadedSourcesRequest": True,
    "supportsEvaluateForHovers": True,
    "supportsStepBack": True,
    "supportsTerminateRequest": True,
    "supportsValueFormattingOptions": False,
    "exceptionBreakpointFilters": EXCEPTION_FILTERS,
}


def catch_trace_pattern(value: object) -> str:
    """The launch (or attach) argument "catchTrace": the function pattern of
    `catch trace FUNC`, as --catch-trace takes it; ValueError says why not."""
    if not isinstance(value, str) or not value.strip() or len(value.split()) > 1:
        raise ValueError("'catchTrace' must be a function name or glob (as `catch trace "
                         "FUNC` takes it; \"*\": every function dynamo traces)")
    return value.strip()
