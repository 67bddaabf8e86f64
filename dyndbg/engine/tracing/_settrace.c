/* Compiled trace functions for the sys.settrace mechanism (settrace.py).
 *
 * Each is a filter in front of a Python trace function of settrace.py: it
 * answers the events that need nothing (most of them) the way that function
 * would, and hands every other event to it. A Python trace function costs a
 * Python call per event; these cost a C call. The Python functions stay the
 * reference and the whole of the pure-Python core.
 *
 *   CodeFilter    before torch's C callback's Python function (the hooks'
 *                 _code_callback, then code_starting): generated code about
 *                 to run whose frames the CallFilter starts (`starts`, for
 *                 the policy's version): the trace installed if it is not.
 *   CallFilter    before _global_trace: a call of code that is not generated,
 *                 not a resume function, with no Ctrl-C pending: None, or
 *                 with --post-mortem, for a callee of generated code, the
 *                 CalleeFilter (f_trace_lines off). A frame of generated code
 *                 whose start _global_trace left to it (`starts`) is started
 *                 here: forgotten, counted, booked and armed with its
 *                 LineFilter, or the ReturnFilter.
 *   CalleeFilter  before _callee_trace: only an exception event reaches it.
 *   LineFilter    before a _line_tracer: an opcode event off the armed
 *                 offsets, a line event that only switches opcode events,
 *                 and an armed instruction whose breakpoint's condition is
 *                 false (evaluated here under the engine lock; the hit is
 *                 counted, and past the last armed one the frame released,
 *                 here too).
 *   ReturnFilter  before _local_trace for a frame traced for its calls
 *                 (TraceLevel.CALLS, --post-mortem): its return while
 *                 continuing, booked here (the engine's on_return only
 *                 forgets then).
 *   RecordFilter  before _local_trace while the engine only records (`record
 *                 on`, continuing): an opcode event off the armed offsets is
 *                 recorded by the compiled History here, under the engine lock.
 *
 * Nothing here may raise past the interpreter's trace call: an error in a
 * filter is cleared and the event goes to the Python function, which
 * catches everything.
 *
 * _settrace_starts.h holds the first three, _settrace_frames.h the others;
 * each filter's constructor is a module function (its arguments checked).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_framebook.h"
#include "_fast_paths.h"
#include "_settrace_starts.h"    /* and, through it, _settrace_frames.h */

static PyMethodDef methods[] = {
    {"frame_book", frame_book, METH_VARARGS, "frame_book(active, thread, keyed, hooks, lock)"},
    {"code_filter", code_filter, METH_VARARGS,
     "code_filter(generated, starts, hooks, policy, engine, thread, sys.settrace, trace, "
     "_code_callback)"},
    {"callee_filter", callee_filter, METH_O, "callee_filter(_callee_trace)"},
    {"call_filter", call_filter, METH_VARARGS,
     "call_filter(generated, prefixes, hooks, policy, _global_trace, callee_filter, starts, "
     "engine, events, frame_book)"},
    {"line_filter", line_filter, METH_VARARGS,
     "line_filter(offsets, hot_lines, line_of, all_opcodes, done_from, checks, conditions, "
     "lock, engine, frame_book, events, line_tracer)"},
    {"return_filter", return_filter, METH_VARARGS,
     "return_filter(frame_book, policy, engine, events, on_idle, _local_trace)"},
    {"record_filter", record_filter, METH_VARARGS,
     "record_filter(record, spec, armed, lock, engine, events, after_record, _fail, "
     "_local_trace)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "dyndbg.engine.tracing._settrace",
    "dyndbg's compiled trace functions for sys.settrace (see settrace.py).", -1, methods,
};

PyMODINIT_FUNC
PyInit__settrace(void)
{
    if (filter_names_init() < 0 || recording_init() < 0 || framebook_init() < 0)
        return NULL;
    if (PyType_Ready(&CodeFilterType) < 0 || PyType_Ready(&CalleeFilterType) < 0 ||
        PyType_Ready(&CallFilterType) < 0 || PyType_Ready(&LineFilterType) < 0 ||
        PyType_Ready(&ReturnFilterType) < 0 || PyType_Ready(&RecordFilterType) < 0 ||
        PyType_Ready(&FrameBookType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL &&
        (PyModule_AddObjectRef(m, "RecordFilterType", (PyObject *)&RecordFilterType) < 0 ||
         PyModule_AddObjectRef(m, "LineFilterType", (PyObject *)&LineFilterType) < 0))
        Py_CLEAR(m);
    return m;
}
