/* The compiled trace filters of _settrace.c that see code and frames
 * start (see there): CodeFilter, CalleeFilter, CallFilter, and the start
 * of a frame the CallFilter makes by itself. */
#ifndef DYNDBG_SETTRACE_STARTS_H
#define DYNDBG_SETTRACE_STARTS_H

#include <Python.h>
#include <frameobject.h>

#include "_filter.h"
#include "_framebook.h"
#include "_fast_paths.h"
#include "_settrace_frames.h"

/* -- the starts left to C (settrace.py's _starts) ---------------------------------------- */

/* starts[id(code)], where the code is still generated: a new reference to
 * its (policy version, trace function) tuple; NULL with no error set if
 * there is none, or with an error set */
static PyObject *
start_of(PyObject *starts, PyObject *generated, PyObject *code)
{
    PyObject *key = PyLong_FromVoidPtr(code);    /* id(code) */
    if (key == NULL)
        return NULL;
    PyObject *start = PyDict_GetItemWithError(starts, key);     /* borrowed */
    int found = start ? PyDict_Contains(generated, key) : 0;
    Py_DECREF(key);
    if (found <= 0 || !PyTuple_Check(start) || PyTuple_GET_SIZE(start) != 2)
        return NULL;
    return Py_NewRef(start);
}

/* 1 if the start was left for the policy's version now, 0 if not, -1 */
static int
start_is_current(PyObject *policy, PyObject *start)
{
    PyObject *version = PyObject_GetAttr(policy, str_version);
    int current = version ? PyObject_RichCompareBool(version, PyTuple_GET_ITEM(start, 0), Py_EQ)
                          : -1;
    Py_XDECREF(version);
    return current;
}

/* -- CodeFilter ----------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *generated;    /* registry.by_id */
    PyObject *starts;       /* the CallFilter's */
    PyObject *hooks;        /* .interrupt_pending */
    PyObject *policy;       /* .stepping, .version */
    PyObject *sink;         /* the engine: .detached */
    PyObject *thread;       /* the tracer's _thread: .installed, .suspended */
    PyObject *settrace;     /* sys.settrace */
    PyObject *trace;        /* what it installs: the CallFilter */
    PyObject *slow;         /* the hooks' _code_callback */
} CodeFilter;

/* As code_starting does for code whose frames start in the CallFilter (so
 * trace_level is ARMED or CALLS): the trace installed in this thread unless
 * it is, or dynamo compiles here. 1: done, 0: the slow path, -1: an error */
static int
code_decision(CodeFilter *self, PyObject *code)
{
    PyObject *start = start_of(self->starts, self->generated, code);
    if (start == NULL)
        return PyErr_Occurred() ? -1 : 0;
    int answered = -1;
    int busy = attribute_true(self->sink, str_detached);
    if (busy == 0)
        busy = attribute_true(self->hooks, str_interrupt_pending);
    if (busy == 0)
        busy = attribute_true(self->policy, str_stepping);
    if (busy != 0) {
        answered = busy < 0 ? -1 : 0;
        goto done;
    }
    int current = start_is_current(self->policy, start);
    if (current != 1) {
        answered = current < 0 ? -1 : 0;
        goto done;
    }
    int installed = attribute_true(self->thread, str_installed);
    int suspended = installed == 0 ? attribute_true(self->thread, str_suspended) : 0;
    if (installed < 0 || suspended < 0)
        goto done;
    if (!installed && !suspended) {     /* _install */
        if (PyObject_SetAttr(self->thread, str_installed, Py_True) < 0)
            goto done;
        PyObject *set = PyObject_CallOneArg(self->settrace, self->trace);
        if (set == NULL)
            goto done;
        Py_DECREF(set);
    }
    answered = 1;
done:
    Py_DECREF(start);
    return answered;
}

static PyObject *
code_filter_call(CodeFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL || !PyCode_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (code_decision(self, args[0]) == 1)
        Py_RETURN_NONE;
    PyErr_Clear();      /* torch's C callback must not see one: _code_callback catches all */
    return PyObject_Vectorcall(self->slow, args, 1, NULL);
}

FILTER_TYPE(CodeFilter, ,
            Py_VISIT(self->generated); Py_VISIT(self->starts); Py_VISIT(self->hooks);
            Py_VISIT(self->policy); Py_VISIT(self->sink); Py_VISIT(self->thread);
            Py_VISIT(self->settrace); Py_VISIT(self->trace); Py_VISIT(self->slow);,
            Py_CLEAR(self->generated); Py_CLEAR(self->starts); Py_CLEAR(self->hooks);
            Py_CLEAR(self->policy); Py_CLEAR(self->sink); Py_CLEAR(self->thread);
            Py_CLEAR(self->settrace); Py_CLEAR(self->trace); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(CodeFilter, "the C callback's filter (settrace.py)")

static PyObject *
code_filter(PyObject *module, PyObject *args)
{
    PyObject *generated, *starts, *hooks, *policy, *sink, *thread, *settrace, *trace, *slow;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOOO", &PyDict_Type, &generated, &PyDict_Type, &starts,
                          &hooks, &policy, &sink, &thread, &settrace, &trace, &slow))
        return NULL;
    CodeFilter *self = PyObject_GC_New(CodeFilter, &CodeFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)code_filter_call;
    self->generated = Py_NewRef(generated);
    self->starts = Py_NewRef(starts);
    self->hooks = Py_NewRef(hooks);
    self->policy = Py_NewRef(policy);
    self->sink = Py_NewRef(sink);
    self->thread = Py_NewRef(thread);
    self->settrace = Py_NewRef(settrace);
    self->trace = Py_NewRef(trace);
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* -- CalleeFilter --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow;
} CalleeFilter;

static PyObject *
callee_call(CalleeFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL)
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (is_event(args[1], str_exception))
        return hand_over(self->slow, args);
    Py_RETURN_NONE;
}

FILTER_TYPE(CalleeFilter, , Py_VISIT(self->slow);, Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(CalleeFilter, "_callee_trace's filter (settrace.py)")

static PyObject *
callee_filter(PyObject *module, PyObject *slow)
{
    CalleeFilter *self = PyObject_GC_New(CalleeFilter, &CalleeFilterType);
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
    PyObject *starts;       /* id(code) -> (policy.version, its trace function): done here */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    FrameBook *book;
} CallFilter;

static PyObject *fast_start(CallFilter *self, PyFrameObject *frame);

/* 1 if id(code) is a generated code's, 0 if not, -1 on an error */
static int
is_generated(PyObject *generated, PyCodeObject *code)
{
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL)
        return -1;
    int found = PyDict_Contains(generated, key);
    Py_DECREF(key);
    return found;
}

/* None for a call nothing of dyndbg needs, the callee filter for a callee of
 * generated code under --post-mortem, NULL (no error set) for the slow path,
 * NULL with an error set on an error. */
static PyObject *
call_decision(CallFilter *self, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    int found = is_generated(self->generated, code);
    if (found == 0) {
        Py_ssize_t count = PyTuple_GET_SIZE(self->prefixes);
        for (Py_ssize_t i = 0; i < count && found == 0; i++)
            found = (int)PyUnicode_Tailmatch(code->co_name, PyTuple_GET_ITEM(self->prefixes, i),
                                             0, PY_SSIZE_T_MAX, -1);
    }
    Py_DECREF(code);
    if (found != 0)
        return NULL;
    int pending = attribute_true(self->hooks, str_interrupt_pending);
    if (pending != 0)
        return NULL;
    int failed_calls = attribute_true(self->policy, str_failed_calls);
    if (failed_calls < 0)
        return NULL;
    if (failed_calls) {
        PyFrameObject *back = PyFrame_GetBack(frame);
        if (back != NULL) {
            PyCodeObject *caller = PyFrame_GetCode(back);
            Py_DECREF(back);
            found = is_generated(self->generated, caller);
            Py_DECREF(caller);
            if (found < 0)
                return NULL;
            if (found) {
                if (PyObject_SetAttr((PyObject *)frame, str_f_trace_lines, Py_False) < 0)
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
    if (!is_event(args[1], str_call))
        Py_RETURN_NONE;
    PyObject *decided = call_decision(self, (PyFrameObject *)args[0]);
    if (decided == NULL && !PyErr_Occurred())
        decided = fast_start(self, (PyFrameObject *)args[0]);
    return decided != NULL ? decided : hand_over(self->slow, args);
}

/* -- a frame started by CallFilter -------------------------------------------------- */

/* As _global_trace starts a frame of generated code, where `starts` holds
 * the code's trace function for the policy's version (left by _global_trace
 * where every frame of the code starts so: a LineFilter at TraceLevel.ARMED,
 * the ReturnFilter at CALLS, and the engine's start only forgets, as
 * Engine.start_only_forgets says), nothing is stepping, no Ctrl-C is
 * pending and the engine is attached: under the engine lock, what the
 * engine keeps by the frame's id forgotten, the start counted and the frame
 * booked; then armed. The trace function (a new reference); NULL with no
 * error set for the slow path, or with an error set. */
static PyObject *
fast_start(CallFilter *self, PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    PyObject *start = start_of(self->starts, self->generated, (PyObject *)code);
    Py_DECREF(code);
    if (start == NULL)
        return NULL;
    PyObject *tracer = PyTuple_GET_ITEM(start, 1);
    int armed = Py_IS_TYPE(tracer, &LineFilterType);    /* else it traces the calls only */
    if ((!armed && !Py_IS_TYPE(tracer, &ReturnFilterType)) ||
        attribute_true(self->hooks, str_interrupt_pending) != 0 ||
        attribute_true(self->sink, str_detached) != 0) {
        Py_DECREF(start);
        return NULL;
    }
    Py_INCREF(tracer);
    int hot = 0;
    if (armed) {
        PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));
        hot = lasti ? line_is_hot((LineFilter *)tracer, lasti) : -1;
        Py_XDECREF(lasti);
    }
    if (hot < 0 || lock_acquire(self->book->lock) < 0)
        goto fail;
    /* After waiting while dyndbg was stopped in another thread, which may
     * have detached, stepped or changed the breakpoints: as _global_trace
     * decides under the lock. */
    int ready = attribute_true(self->sink, str_detached) == 0 &&
                attribute_true(self->policy, str_stepping) == 0;
    if (ready)
        ready = start_is_current(self->policy, start) == 1;
    int booked = ready && book_forget(self->book, (PyObject *)frame) == 0 &&
                 count_event(self->events, str_start) == 0 &&
                 book_add(self->book, (PyObject *)frame) == 0;
    if (lock_release(self->book->lock) < 0 || !booked)
        goto fail;
    /* f_trace before f_trace_opcodes: 3.13 starts opcode events only so */
    if (PyObject_SetAttr((PyObject *)frame, str_f_trace, tracer) < 0 ||
        PyObject_SetAttr((PyObject *)frame, str_f_trace_lines, armed ? Py_True : Py_False) < 0 ||
        PyObject_SetAttr((PyObject *)frame, str_f_trace_opcodes, hot ? Py_True : Py_False) < 0) {
        book_drop(self->book, (PyObject *)frame);
        goto fail;
    }
    Py_DECREF(start);
    return tracer;
fail:
    Py_DECREF(start);
    Py_DECREF(tracer);
    return NULL;
}

FILTER_TYPE(CallFilter, ,
            Py_VISIT(self->generated); Py_VISIT(self->prefixes); Py_VISIT(self->hooks);
            Py_VISIT(self->policy); Py_VISIT(self->slow); Py_VISIT(self->callee);
            Py_VISIT(self->starts); Py_VISIT(self->sink); Py_VISIT(self->events);
            Py_VISIT(self->book);,
            Py_CLEAR(self->generated); Py_CLEAR(self->prefixes); Py_CLEAR(self->hooks);
            Py_CLEAR(self->policy); Py_CLEAR(self->slow); Py_CLEAR(self->callee);
            Py_CLEAR(self->starts); Py_CLEAR(self->sink); Py_CLEAR(self->events);
            Py_CLEAR(self->book);)

FILTER_TYPE_OBJECT(CallFilter, "_global_trace's filter (settrace.py)")

static PyObject *
call_filter(PyObject *module, PyObject *args)
{
    PyObject *generated, *prefixes, *hooks, *policy, *slow, *callee, *starts, *sink, *events,
        *book;
    if (!PyArg_ParseTuple(args, "O!O!OOOOO!OO!O!", &PyDict_Type, &generated, &PyTuple_Type,
                          &prefixes, &hooks, &policy, &slow, &callee, &PyDict_Type, &starts,
                          &sink, &PyDict_Type, &events, &FrameBookType, &book))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(prefixes); i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(prefixes, i)))
            return PyErr_Format(PyExc_TypeError, "call_filter: a prefix is not a str");
    CallFilter *self = PyObject_GC_New(CallFilter, &CallFilterType);
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
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

#endif
