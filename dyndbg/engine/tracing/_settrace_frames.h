/* The compiled trace filters of _settrace.c that a traced frame's events
 * reach (see there): LineFilter, ReturnFilter, RecordFilter. */
#ifndef DYNDBG_SETTRACE_FRAMES_H
#define DYNDBG_SETTRACE_FRAMES_H

#include <Python.h>
#include <frameobject.h>

#include "_filter.h"
#include "_framebook.h"
#include "_fast_paths.h"

/* -- LineFilter ----------------------------------------------------------------------- */

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

/* plan.all_opcodes or plan.line_of.get(lasti) in plan.hot_lines: 1, 0, or -1 */
static int
line_is_hot(LineFilter *self, PyObject *lasti)
{
    if (self->all_opcodes)
        return 1;
    PyObject *line = PyDict_GetItemWithError(self->line_of, lasti);   /* borrowed */
    if (line == NULL && PyErr_Occurred())
        return -1;
    return PySet_Contains(self->hot_lines, line ? line : Py_None);
}

/* An armed instruction: 1 if it has a ConditionCheck that is false here
 * (the hit counted; the frame released past its last armed instruction, as
 * the line tracer does after a dispatch), 0 for the slow path, -1 on an error. */
static int
false_condition(LineFilter *self, PyFrameObject *frame, PyObject *lasti)
{
    PyObject *check = PyDict_GetItemWithError(self->checks, lasti);     /* borrowed */
    if (check == NULL)
        return PyErr_Occurred() ? -1 : 0;
    int detached = attribute_true(self->sink, str_detached);
    if (detached != 0)
        return detached < 0 ? -1 : 0;
    Py_INCREF(check);
    int false_here = condition_is_false(check, frame, self->conditions, self->lock);
    Py_DECREF(check);
    if (false_here != 1)
        return false_here;
    long offset = PyLong_AsLong(lasti);
    if (self->done_from >= 0 && offset >= self->done_from) {
        PyObject *trace = PyObject_GetAttr((PyObject *)frame, str_f_trace);
        int mine = trace == (PyObject *)self;
        Py_XDECREF(trace);
        if (trace == NULL)
            return -1;
        if (mine && book_release(self->book, (PyObject *)frame) < 0)
            return -1;
    }
    return 1;
}

/* 1: answered (None), 0: the slow path, -1: an error */
static int
line_decision(LineFilter *self, PyFrameObject *frame, PyObject *event)
{
    int opcode = is_event(event, str_opcode);
    if (!opcode && !is_event(event, str_line))
        return 0;
    PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));
    if (lasti == NULL)
        return -1;
    int armed = PySet_Contains(self->offsets, lasti);
    int answered = -1;
    if (armed < 0)
        goto done;
    if (opcode) {
        if (armed && (answered = false_condition(self, frame, lasti)) != 1)
            goto done;
        answered = count_event(self->events, str_instruction) < 0 ? -1 : 1;
        goto done;
    }
    int hot = line_is_hot(self, lasti);
    if (hot < 0)
        goto done;
    if (PyObject_SetAttr((PyObject *)frame, str_f_trace_opcodes, hot ? Py_True : Py_False) < 0)
        goto done;
    /* the opcode event for this instruction follows if hot; an armed one
     * that the line event reaches is handled here as its opcode */
    if (!hot && armed && (answered = false_condition(self, frame, lasti)) != 1)
        goto done;
    answered = count_event(self->events, str_line) < 0 ? -1 : 1;
done:
    Py_DECREF(lasti);
    return answered;
}

static PyObject *
line_filter_call(LineFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (line_decision(self, (PyFrameObject *)args[0], args[1]) == 1)
        Py_RETURN_NONE;
    return hand_over(self->slow, args);
}

FILTER_TYPE(LineFilter, ,
            Py_VISIT(self->offsets); Py_VISIT(self->hot_lines); Py_VISIT(self->line_of);
            Py_VISIT(self->checks); Py_VISIT(self->conditions); Py_VISIT(self->lock);
            Py_VISIT(self->sink); Py_VISIT(self->book);
            Py_VISIT(self->events); Py_VISIT(self->slow);,
            Py_CLEAR(self->offsets); Py_CLEAR(self->hot_lines); Py_CLEAR(self->line_of);
            Py_CLEAR(self->checks); Py_CLEAR(self->conditions); Py_CLEAR(self->lock);
            Py_CLEAR(self->sink); Py_CLEAR(self->book);
            Py_CLEAR(self->events); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(LineFilter, "a _line_tracer's filter (settrace.py)")

static PyObject *
line_filter(PyObject *module, PyObject *args)
{
    PyObject *offsets, *hot_lines, *line_of, *checks, *conditions, *lock, *sink, *book,
        *events, *slow;
    int all_opcodes;
    Py_ssize_t done_from;
    if (!PyArg_ParseTuple(args, "OOO!pnO!OOOO!O!O", &offsets, &hot_lines, &PyDict_Type, &line_of,
                          &all_opcodes, &done_from, &PyDict_Type, &checks, &conditions, &lock,
                          &sink, &FrameBookType, &book, &PyDict_Type, &events, &slow))
        return NULL;
    if (!PyAnySet_Check(offsets) || !PyAnySet_Check(hot_lines))
        return PyErr_Format(PyExc_TypeError, "line_filter: offsets and hot_lines are sets");
    LineFilter *self = PyObject_GC_New(LineFilter, &LineFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)line_filter_call;
    self->offsets = Py_NewRef(offsets);
    self->hot_lines = Py_NewRef(hot_lines);
    self->line_of = Py_NewRef(line_of);
    self->all_opcodes = all_opcodes;
    self->done_from = done_from;
    self->checks = Py_NewRef(checks);
    self->conditions = Py_NewRef(conditions);
    self->lock = Py_NewRef(lock);
    self->sink = Py_NewRef(sink);
    self->book = (FrameBook *)Py_NewRef(book);
    self->events = Py_NewRef(events);
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* -- ReturnFilter --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    FrameBook *book;
    PyObject *policy;       /* .stepping */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    PyObject *idle;         /* the engine's on_idle */
    PyObject *slow;         /* _local_trace */
} ReturnFilter;

/* A return while continuing, as _dispatch takes it: under the engine lock,
 * counted, the frame dropped and forgotten (Engine.on_return, stepping
 * off: no `trace on`, no stepping mode that names the frame), the engine
 * told when no traced frame is left; then the trace removed if it may go.
 * 1: answered (None), 0: the slow path, -1: an error */
static int
return_decision(ReturnFilter *self, PyFrameObject *frame, PyObject *event)
{
    if (!is_event(event, str_return))
        return 0;
    FrameBook *book = self->book;
    if (lock_acquire(book->lock) < 0)
        return -1;
    int answered = -1;
    /* after waiting while dyndbg was stopped in another thread: it may have
     * detached, or begun stepping or `trace on` */
    int busy = attribute_true(self->sink, str_detached);
    if (busy == 0)
        busy = attribute_true(self->policy, str_stepping);
    if (busy != 0) {
        answered = busy < 0 ? -1 : 0;     /* _dispatch's to do */
    } else if (count_event(self->events, str_return) == 0 &&
               book_drop(book, (PyObject *)frame) == 0 &&
               book_forget(book, (PyObject *)frame) == 0) {
        PyObject *idle = PyList_GET_SIZE(book->active) ? Py_NewRef(Py_None)
                                                        : PyObject_CallNoArgs(self->idle);
        Py_XDECREF(idle);
        answered = idle != NULL ? 1 : -1;
    }
    if (lock_release(book->lock) < 0)
        return -1;
    if (answered == 1 && book_maybe_remove(book) < 0)
        return -1;
    return answered;
}

static PyObject *
return_filter_call(ReturnFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (return_decision(self, (PyFrameObject *)args[0], args[1]) == 1)
        Py_RETURN_NONE;
    return hand_over(self->slow, args);
}

FILTER_TYPE(ReturnFilter, ,
            Py_VISIT(self->book); Py_VISIT(self->policy); Py_VISIT(self->sink);
            Py_VISIT(self->events); Py_VISIT(self->idle); Py_VISIT(self->slow);,
            Py_CLEAR(self->book); Py_CLEAR(self->policy); Py_CLEAR(self->sink);
            Py_CLEAR(self->events); Py_CLEAR(self->idle); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(ReturnFilter, "_local_trace's filter for a frame traced for its calls")

static PyObject *
return_filter(PyObject *module, PyObject *args)
{
    PyObject *book, *policy, *sink, *events, *idle, *slow;
    if (!PyArg_ParseTuple(args, "O!OOO!OO", &FrameBookType, &book, &policy, &sink, &PyDict_Type,
                          &events, &idle, &slow))
        return NULL;
    ReturnFilter *self = PyObject_GC_New(ReturnFilter, &ReturnFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)return_filter_call;
    self->book = (FrameBook *)Py_NewRef(book);
    self->policy = Py_NewRef(policy);
    self->sink = Py_NewRef(sink);
    self->events = Py_NewRef(events);
    self->idle = Py_NewRef(idle);
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* -- RecordFilter --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *record;       /* the compiled History's record (engine/recording/_history.c) */
    PyObject *spec;         /* what it needs of this frame's code */
    PyObject *armed;        /* offsets where a breakpoint may stop: the slow path */
    PyObject *lock;         /* threads.ENGINE_LOCK */
    PyObject *sink;         /* the engine: .detached */
    PyObject *events;       /* the tracer's Counter */
    PyObject *after;        /* History.after_record(result), for a result but RECORDED */
    PyObject *fail;         /* the tracer's _fail(error) */
    PyObject *slow;         /* _local_trace */
} RecordFilter;


/* 1: recorded (None), 0: the slow path, -1: an error */
static int
record_decision(RecordFilter *self, PyFrameObject *frame, PyObject *event)
{
    if (!is_event(event, str_opcode))
        return 0;
    PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));
    if (lasti == NULL)
        return -1;
    int armed = PyDict_Contains(self->armed, lasti);
    Py_DECREF(lasti);
    if (armed != 0)
        return armed < 0 ? -1 : 0;
    int detached = attribute_true(self->sink, str_detached);
    if (detached != 0)
        return detached < 0 ? -1 : 0;
    /* Under the engine lock, as every event that reaches the engine. */
    if (record_instruction(self->record, (PyObject *)frame, self->spec, self->lock,
                           self->after) < 0)
        return -1;
    return count_event(self->events, str_instruction) < 0 ? -1 : 1;
}

static PyObject *
record_filter_call(RecordFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    int decided = record_decision(self, (PyFrameObject *)args[0], args[1]);
    if (decided == 1)
        Py_RETURN_NONE;
    if (decided < 0)
        return hand_failure(self->fail);     /* settrace.py's _fail */
    return PyObject_Vectorcall(self->slow, args, 3, NULL);
}

FILTER_TYPE(RecordFilter, ,
            Py_VISIT(self->record); Py_VISIT(self->spec); Py_VISIT(self->armed);
            Py_VISIT(self->lock); Py_VISIT(self->sink); Py_VISIT(self->events);
            Py_VISIT(self->after); Py_VISIT(self->fail); Py_VISIT(self->slow);,
            Py_CLEAR(self->record); Py_CLEAR(self->spec); Py_CLEAR(self->armed);
            Py_CLEAR(self->lock); Py_CLEAR(self->sink); Py_CLEAR(self->events);
            Py_CLEAR(self->after); Py_CLEAR(self->fail); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(RecordFilter, "_local_trace's filter while only recording (settrace.py)")

static PyObject *
record_filter(PyObject *module, PyObject *args)
{
    PyObject *record, *spec, *armed, *lock, *sink, *events, *after, *fail, *slow;
    if (!PyArg_ParseTuple(args, "OOO!OOO!OOO", &record, &spec, &PyDict_Type, &armed, &lock, &sink,
                          &PyDict_Type, &events, &after, &fail, &slow))
        return NULL;
    RecordFilter *self = PyObject_GC_New(RecordFilter, &RecordFilterType);
    if (self == NULL)
        return NULL;
    self->vectorcall = (vectorcallfunc)record_filter_call;
    self->record = Py_NewRef(record);
    self->spec = Py_NewRef(spec);
    self->armed = Py_NewRef(armed);
    self->lock = Py_NewRef(lock);
    self->sink = Py_NewRef(sink);
    self->events = Py_NewRef(events);
    self->after = Py_NewRef(after);
    self->fail = Py_NewRef(fail);
    self->slow = Py_NewRef(slow);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

#endif
