/* The compiled trace filters of _settrace.c (see there), a translation unit
 * each: _code_filter.c, _call_filter.c (the CallFilter, the CalleeFilter it
 * hands callees, and the frames it starts by itself), _line_filter.c,
 * _return_filter.c, _record_filter.c; _starts.c the starts left to C that
 * the first two read. What they share is declared here: the type objects
 * and their constructors (module functions, their arguments checked), the
 * LineFilter the CallFilter arms a frame with, the hand-over to the Python
 * trace function behind a filter, and the type boilerplate. The return
 * codes are cpython/_capi.h's. */
#ifndef DYNDBG_FILTERS_H
#define DYNDBG_FILTERS_H

#include <Python.h>
#include <stddef.h>

#include "../../cpython/_capi.h"
#include "_framebook.h"

extern DYNDBG_HIDDEN PyTypeObject DyndbgCodeFilter_Type, DyndbgCalleeFilter_Type,
    DyndbgCallFilter_Type, DyndbgLineFilter_Type, DyndbgReturnFilter_Type,
    DyndbgRecordFilter_Type;

/* The constructors: a filter (owned), or NULL with an error set */
DYNDBG_HIDDEN PyObject *dyndbg_code_filter(PyObject *module, PyObject *args);
DYNDBG_HIDDEN PyObject *dyndbg_callee_filter(PyObject *module, PyObject *slow);
DYNDBG_HIDDEN PyObject *dyndbg_call_filter(PyObject *module, PyObject *args);
DYNDBG_HIDDEN PyObject *dyndbg_line_filter(PyObject *module, PyObject *args);
DYNDBG_HIDDEN PyObject *dyndbg_return_filter(PyObject *module, PyObject *args);
DYNDBG_HIDDEN PyObject *dyndbg_record_filter(PyObject *module, PyObject *args);

/* -- the LineFilter, which the CallFilter arms a frame with ----------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *offsets;      /* plan.offsets: the armed instructions */
    PyObject *hot_lines;    /* plan.hot_lines */
    PyObject *line_of;      /* plan.line_of: offset -> line */
    int all_opcodes;        /* plan.all_opcodes */
    Py_ssize_t done_from;   /* plan.done_after: from this offset on (-1: never) */
    PyObject *checks;       /* offset -> ConditionCheck, evaluated here */
    PyObject *conditions;   /* the engine's Conditions */
    PyObject *lock;         /* threads.ENGINE_LOCK */
    PyObject *sink;         /* the engine: .detached */
    FrameBook *book;        /* to release the frame (the tracer's _release) */
    PyObject *events;       /* the tracer's Counter */
    PyObject *slow;         /* the plan's _line_tracer */
} LineFilter;

/* plan.all_opcodes or plan.line_of.get(lasti) in plan.hot_lines */
DYNDBG_HIDDEN dyndbg_truth dyndbg_line_is_hot(LineFilter *self, PyObject *lasti);

/* -- the starts left to C (settrace.py's _starts; _starts.c) ----------------------------- */

/* The fields of a settrace_filters.FrameStart, a value of `starts`, read by
 * index (tests/test_c_boundary_unit.py pins them to its _fields). */
enum FrameStartField {
    FRAME_START_VERSION = 0,
    FRAME_START_TRACE = 1,
    FRAME_START_FIELDS = 2,
};

/* starts[id(code)], where the code is still generated: its FrameStart
 * (owned); NULL with no error set if there is none, or with an error set */
DYNDBG_HIDDEN PyObject *dyndbg_start_of(PyObject *starts, PyObject *generated, PyObject *code);

/* the start was left for the policy's version now */
DYNDBG_HIDDEN dyndbg_truth dyndbg_start_is_current(PyObject *policy, PyObject *start);

/* -- what every filter does -------------------------------------------------------------- */

/* The event to the Python trace function behind the filter, any error of the
 * filter's cleared: its answer (owned), or NULL with its error set */
static inline PyObject *
dyndbg_hand_over(PyObject *slow, PyObject *const *args)
{
    PyErr_Clear();
    return PyObject_Vectorcall(slow, args, 3, NULL);
}

/* A filter type's garbage-collector hooks and deallocator: Traverse and
 * Clear visit and clear its object fields. */
#define FILTER_TYPE(Name, Traverse, Clear)                                                   \
    static int Name##_traverse(Name *self, visitproc visit, void *arg) { Traverse return 0; } \
    static int Name##_clear(Name *self) { Clear return 0; }                                  \
    static void Name##_dealloc(Name *self)                                                   \
    {                                                                                        \
        PyObject_GC_UnTrack(self);                                                           \
        Name##_clear(self);                                                                  \
        Py_TYPE(self)->tp_free((PyObject *)self);                                            \
    }

/* A filter's type object, Dyndbg<Name>_Type: called by vectorcall */
#define FILTER_TYPE_OBJECT(Name, Doc)                                                        \
    PyTypeObject Dyndbg##Name##_Type = {                                                     \
        PyVarObject_HEAD_INIT(NULL, 0)                                                       \
        .tp_name = "dyndbg.engine.tracing._settrace." #Name,                                 \
        .tp_doc = Doc,                                                                       \
        .tp_basicsize = sizeof(Name),                                                        \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,    \
        .tp_vectorcall_offset = offsetof(Name, vectorcall),                                  \
        .tp_call = PyVectorcall_Call,                                                        \
        .tp_dealloc = (destructor)Name##_dealloc,                                            \
        .tp_traverse = (traverseproc)Name##_traverse,                                        \
        .tp_clear = (inquiry)Name##_clear,                                                   \
    };

#endif
