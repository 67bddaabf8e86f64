/* The names of _interned.h, interned once. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_interned.h"

InternedNames dyndbg_names;

dyndbg_status
dyndbg_interned_init(void)
{
    InternedNames *n = &dyndbg_names;
    return dyndbg_intern(&n->call, "call") || dyndbg_intern(&n->line, "line") ||
           dyndbg_intern(&n->opcode, "opcode") || dyndbg_intern(&n->exception, "exception") ||
           dyndbg_intern(&n->return_, "return") ||
           dyndbg_intern(&n->instruction, "instruction") || dyndbg_intern(&n->start, "start") ||
           dyndbg_intern(&n->detached, "detached") ||
           dyndbg_intern(&n->interrupt_pending, "interrupt_pending") ||
           dyndbg_intern(&n->failed_calls, "failed_calls") ||
           dyndbg_intern(&n->stepping, "stepping") || dyndbg_intern(&n->version, "version") ||
           dyndbg_intern(&n->suspended, "suspended") || dyndbg_intern(&n->frames, "frames") ||
           dyndbg_intern(&n->installed, "installed") ||
           dyndbg_intern(&n->has_callback, "has_callback") ||
           dyndbg_intern(&n->f_trace, "f_trace") ||
           dyndbg_intern(&n->f_trace_lines, "f_trace_lines") ||
           dyndbg_intern(&n->f_trace_opcodes, "f_trace_opcodes") ? DYNDBG_ERROR : DYNDBG_OK;
}
