/* The filters of a call event (see _settrace.c): the CallFilter, the
 * CalleeFilter it hands a callee of generated code under --post-mortem, and
 * the start of a frame of generated code that the CallFilter makes by
 * itself. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"
#include "_fast_paths.h"
#include "_filters.h"
#include "_interned.h"

/* -- CalleeFilter --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow;         /* _callee_trace */
} CalleeFilter;

static PyObject *
callee_call(CalleeFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL)
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (dyndbg_is_event(args[1], dyndbg_names.exception))
        return dyndbg_hand_over(self->slow, args);
    Py_RETURN_NONE;
}

FILTER_TYPE(CalleeFilter, Py_VISIT(self->slow);, Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(CalleeFilter, "_callee_trace's filter (settrace.py)")

PyObject *
dyndbg_callee_filter(PyObject *Py_UNUSED(module), PyObject *slow)
{
    CalleeFilter *self = PyObject_GC_New(CalleeFilter, &DyndbgCalleeFilter_Type);     /* owned */
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)callee_call;
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* -- CallFilter ----------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *generated;    /* registry.by_id: id(code) -> entry */
    PyObject *prefixes;     /* RESUME_PREFIXES */
    PyObject *hooks;        /* .interrupt_pending */
    PyObject *policy;       /* .failed_calls */
    PyObject *slow;         /* _global_trace */
    PyObject *callee;       /* the CalleeFilter */
    PyObject *starts;       /* id(code) -> FrameStart (policy.version, its trace function) */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    FrameBook *book;
    PyObject *graphs;       /* watched graph codes: id(code) (None: a lazy one's) -> who is told */
} CallFilter;

static PyObject *fast_start(CallFilter *self, PyFrameObject *frame);

/* (is_generated below) */
static dyndbg_truth is_generated(PyObject *generated, PyCodeObject *code);

/* A watched graph's frame may start (settrace_graphs.py): its code is
 * watched, or a lazy graph's code is not made yet (key None), so that every
 * call is offered. Empty but while a graph is watched. */
static dyndbg_truth
is_watched_graph(PyObject *graphs, PyFrameObject *frame)
{
    if (PyDict_GET_SIZE(graphs) == 0)
        return DYNDBG_FALSE;
    dyndbg_truth lazy = PyDict_Contains(graphs, Py_None);
    if (lazy != DYNDBG_FALSE)
        return lazy;
    PyCodeObject *code = PyFrame_GetCode(frame);      /* owned */
    dyndbg_truth found = is_generated(graphs, code);
    Py_DECREF(code);
    return found;
}

/* id(code) is a generated code's */
static dyndbg_truth
is_generated(PyObject *generated, PyCodeObject *code)
{
    PyObject *key = PyLong_FromVoidPtr(code);     /* owned */
    if (key == NULL)
        return DYNDBG_ERROR;
    dyndbg_truth found = PyDict_Contains(generated, key);
    Py_DECREF(key);
    return found;
}

/* The answer (owned) for a call that is no generated frame's start: None
 * for a call nothing of dyndbg needs, the callee filter for a callee of
 * generated code under --post-mortem; NULL with no error set for the slow
 * path, or with an error set. */
static PyObject *
call_decision(CallFilter *self, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);      /* owned */
    dyndbg_truth found = is_generated(self->generated, code);
    if (found == DYNDBG_FALSE) {
        Py_ssize_t count = PyTuple_GET_SIZE(self->prefixes);
        for (Py_ssize_t i = 0; i < count && found == DYNDBG_FALSE; i++)
            found = (int)PyUnicode_Tailmatch(code->co_name, PyTuple_GET_ITEM(self->prefixes, i),
                                             0, PY_SSIZE_T_MAX, -1);
    }
    Py_DECREF(code);
    if (found != DYNDBG_FALSE)      /* generated, a resume function, or an error */
        return NULL;
    dyndbg_truth pending = dyndbg_attribute_true(self->hooks, dyndbg_names.interrupt_pending);
    if (pending != DYNDBG_FALSE)
        return NULL;
    dyndbg_truth failed_calls = dyndbg_attribute_true(self->policy, dyndbg_names.failed_calls);
    if (failed_calls == DYNDBG_ERROR)
        return NULL;
    if (failed_calls == DYNDBG_TRUE) {
        PyFrameObject *back = PyFrame_GetBack(frame);     /* owned */
        if (back != NULL) {
            PyCodeObject *caller = PyFrame_GetCode(back);     /* owned */
            Py_DECREF(back);
            found = is_generated(self->generated, caller);
            Py_DECREF(caller);
            if (found == DYNDBG_ERROR)
                return NULL;
            if (found == DYNDBG_TRUE) {
                if (PyObject_SetAttr((PyObject *)frame, dyndbg_names.f_trace_lines, Py_False) < 0)
                    return NULL;
                return Py_NewRef(self->callee);
            }
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
call_filter_call(CallFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (!dyndbg_is_event(args[1], dyndbg_names.call))
        Py_RETURN_NONE;
    if (is_watched_graph(self->graphs, (PyFrameObject *)args[0]) != DYNDBG_FALSE)
        return dyndbg_hand_over(self->slow, args);     /* _global_trace offers it (or an error) */
    PyObject *decided = call_decision(self, (PyFrameObject *)args[0]);     /* owned */
    if (decided == NULL && !PyErr_Occurred())
        decided = fast_start(self, (PyFrameObject *)args[0]);
    return decided != NULL ? decided : dyndbg_hand_over(self->slow, args);
}

/* -- a frame started by CallFilter -------------------------------------------------- */

/* As _global_trace starts a frame of generated code, where `starts` holds
 * the code's trace function for the policy's version (left by _global_trace
 * where every frame of the code starts so: a LineFilter at TraceLevel.ARMED,
 * the ReturnFilter at CALLS, and the engine's start only forgets, as
 * Engine.start_only_forgets says), nothing is stepping, no Ctrl-C is
 * pending and the engine is attached: under the engine lock, what the
 * engine keeps by the frame's id forgotten, the start counted and the frame
 * booked; then armed. The trace function (owned); NULL with no error set
 * for the slow path, or with an error set. */
static PyObject *
fast_start(CallFilter *self, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);      /* owned */
    PyObject *start = dyndbg_start_of(self->starts, self->generated, (PyObject *)code);  /* owned */
    Py_DECREF(code);
    if (start == NULL)
        return NULL;
    PyObject *tracer = PyTuple_GET_ITEM(start, FRAME_START_TRACE);      /* borrowed */
    int armed = Py_IS_TYPE(tracer, &DyndbgLineFilter_Type);    /* else it traces the calls only */
    if ((!armed && !Py_IS_TYPE(tracer, &DyndbgReturnFilter_Type)) ||
        dyndbg_attribute_true(self->hooks, dyndbg_names.interrupt_pending) != DYNDBG_FALSE ||
        dyndbg_attribute_true(self->sink, dyndbg_names.detached) != DYNDBG_FALSE) {
        Py_DECREF(start);
        return NULL;
    }
    Py_INCREF(tracer);      /* owned from here */
    dyndbg_truth hot = DYNDBG_FALSE;
    if (armed) {
        PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));      /* owned */
        hot = lasti ? dyndbg_line_is_hot((LineFilter *)tracer, lasti) : DYNDBG_ERROR;
        Py_XDECREF(lasti);
    }
    if (hot == DYNDBG_ERROR || dyndbg_lock_acquire(self->book->lock) < 0)
        goto fail;
    /* After waiting while dyndbg was stopped in another thread, which may
     * have detached, stepped or changed the breakpoints: as _global_trace
     * decides under the lock. */
    int ready = dyndbg_attribute_true(self->sink, dyndbg_names.detached) == DYNDBG_FALSE &&
                dyndbg_attribute_true(self->policy, dyndbg_names.stepping) == DYNDBG_FALSE;
    if (ready)
        ready = dyndbg_start_is_current(self->policy, start) == DYNDBG_TRUE;
    int booked = ready && dyndbg_book_forget(self->book, (PyObject *)frame) == DYNDBG_OK &&
                 dyndbg_count_event(self->events, dyndbg_names.start) == DYNDBG_OK &&
                 dyndbg_book_add(self->book, (PyObject *)frame) == DYNDBG_OK;
    if (dyndbg_lock_release(self->book->lock) < 0 || !booked)
        goto fail;
    /* f_trace before f_trace_opcodes: 3.13 starts opcode events only so */
    PyObject *frame_object = (PyObject *)frame;
    if (PyObject_SetAttr(frame_object, dyndbg_names.f_trace, tracer) < 0 ||
        PyObject_SetAttr(frame_object, dyndbg_names.f_trace_lines,
                         armed ? Py_True : Py_False) < 0 ||
        PyObject_SetAttr(frame_object, dyndbg_names.f_trace_opcodes,
                         hot ? Py_True : Py_False) < 0) {
        dyndbg_book_drop(self->book, (PyObject *)frame);
        goto fail;
    }
    Py_DECREF(start);
    return tracer;
fail:
    Py_DECREF(start);
    Py_DECREF(tracer);
    return NULL;
}

FILTER_TYPE(CallFilter,
            Py_VISIT(self->generated); Py_VISIT(self->prefixes); Py_VISIT(self->hooks);
            Py_VISIT(self->policy); Py_VISIT(self->slow); Py_VISIT(self->callee);
            Py_VISIT(self->starts); Py_VISIT(self->sink); Py_VISIT(self->events);
            Py_VISIT(self->book); Py_VISIT(self->graphs);,
            Py_CLEAR(self->generated); Py_CLEAR(self->prefixes); Py_CLEAR(self->hooks);
            Py_CLEAR(self->policy); Py_CLEAR(self->slow); Py_CLEAR(self->callee);
            Py_CLEAR(self->starts); Py_CLEAR(self->sink); Py_CLEAR(self->events);
            Py_CLEAR(self->book); Py_CLEAR(self->graphs);)

FILTER_TYPE_OBJECT(CallFilter, "_global_trace's filter (settrace.py)")

PyObject *
dyndbg_call_filter(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *generated, *prefixes, *hooks, *policy, *slow, *callee, *starts, *sink, *events,
        *book, *graphs;      /* borrowed */
    if (!PyArg_ParseTuple(args, "O!O!OOOOO!OO!O!O!", &PyDict_Type, &generated, &PyTuple_Type,
                          &prefixes, &hooks, &policy, &slow, &callee, &PyDict_Type, &starts,
                          &sink, &PyDict_Type, &events, &DyndbgFrameBook_Type, &book,
                          &PyDict_Type, &graphs))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes); i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(prefixes, i)))
            return PyErr_Format(PyExc_TypeError, "call_filter: a prefix is not a str");
    CallFilter *self = PyObject_GC_New(CallFilter, &DyndbgCallFilter_Type);     /* owned */
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)call_filter_call;
    self->generated = Py_NewRef(generated);
    self->prefixes = Py_NewRef(prefixes);
    self->hooks = Py_NewRef(hooks);
    self->policy = Py_NewRef(policy);
    self->slow = Py_NewRef(slow);
    self->callee = Py_NewRef(callee);
    self->starts = Py_NewRef(starts);
    self->sink = Py_NewRef(sink);
    self->events = Py_NewRef(events);
    self->book = (FrameBook *)Py_NewRef(book);
    self->graphs = Py_NewRef(graphs);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
