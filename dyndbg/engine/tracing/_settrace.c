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
 * Each filter is a translation unit of its own (_filters.h lists them);
 * their constructors are this module's functions (their arguments checked).
 * The FrameBook (_framebook.c) keeps the traced frames; _interned.c the
 * names they read; _fast_paths.c what they share with _monitoring.c.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_fast_paths.h"
#include "_filters.h"
#include "_framebook.h"
#include "_interned.h"

static PyMethodDef methods[] = {
    {"frame_book", dyndbg_frame_book, METH_VARARGS,
     "frame_book(active, thread, keyed, hooks, lock)"},
    {"code_filter", dyndbg_code_filter, METH_VARARGS,
     "code_filter(generated, starts, hooks, policy, engine, thread, sys.settrace, trace, "
     "_code_callback)"},
    {"callee_filter", dyndbg_callee_filter, METH_O, "callee_filter(_callee_trace)"},
    {"call_filter", dyndbg_call_filter, METH_VARARGS,
     "call_filter(generated, prefixes, hooks, policy, _global_trace, callee_filter, starts, "
     "engine, events, frame_book, graphs)"},
    {"line_filter", dyndbg_line_filter, METH_VARARGS,
     "line_filter(offsets, hot_lines, line_of, all_opcodes, done_from, checks, conditions, "
     "lock, engine, frame_book, events, line_tracer)"},
    {"return_filter", dyndbg_return_filter, METH_VARARGS,
     "return_filter(frame_book, policy, engine, events, on_idle, _local_trace)"},
    {"record_filter", dyndbg_record_filter, METH_VARARGS,
     "record_filter(record, spec, armed, lock, engine, events, after_record, _fail, "
     "_local_trace)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "dyndbg.engine.tracing._settrace",
    .m_doc = "dyndbg's compiled trace functions for sys.settrace (see settrace.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__settrace(void)
{
    if (dyndbg_interned_init() < 0 || dyndbg_fast_paths_init() < 0)
        return NULL;
    if (PyType_Ready(&DyndbgCodeFilter_Type) < 0 || PyType_Ready(&DyndbgCalleeFilter_Type) < 0 ||
        PyType_Ready(&DyndbgCallFilter_Type) < 0 || PyType_Ready(&DyndbgLineFilter_Type) < 0 ||
        PyType_Ready(&DyndbgReturnFilter_Type) < 0 || PyType_Ready(&DyndbgRecordFilter_Type) < 0 ||
        PyType_Ready(&DyndbgFrameBook_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);     /* owned */
    if (m != NULL &&
        (PyModule_AddObjectRef(m, "RecordFilterType", (PyObject *)&DyndbgRecordFilter_Type) < 0 ||
         PyModule_AddObjectRef(m, "LineFilterType", (PyObject *)&DyndbgLineFilter_Type) < 0))
        Py_CLEAR(m);
    return m;
}
