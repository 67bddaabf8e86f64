/* The LineFilter (see _settrace.c): before a _line_tracer, it answers the
 * events off the armed instructions, and an armed one whose breakpoint's
 * condition is false. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"
#include "_fast_paths.h"
#include "_filters.h"
#include "_interned.h"

dyndbg_truth
dyndbg_line_is_hot(LineFilter *self, PyObject *lasti)
{
    if (self->all_opcodes)
        return DYNDBG_TRUE;
    PyObject *line = PyDict_GetItemWithError(self->line_of, lasti);   /* borrowed */
    if (line == NULL && PyErr_Occurred())
        return DYNDBG_ERROR;
    return PySet_Contains(self->hot_lines, line ? line : Py_None);
}

/* An armed instruction: DYNDBG_ANSWERED if it has a ConditionCheck that is
 * false here (the hit counted; the frame released past its last armed
 * instruction, as the line tracer does after a dispatch), DYNDBG_SLOW_PATH,
 * or DYNDBG_ERROR. */
static dyndbg_decision
false_condition(LineFilter *self, PyFrameObject *frame, PyObject *lasti)
{
    PyObject *check = PyDict_GetItemWithError(self->checks, lasti);     /* borrowed */
    if (check == NULL)
        return PyErr_Occurred() ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
    dyndbg_truth detached = dyndbg_attribute_true(self->sink, dyndbg_names.detached);
    if (detached != DYNDBG_FALSE)
        return detached == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
    Py_INCREF(check);       /* owned while the condition runs */
    dyndbg_decision false_here =
        dyndbg_condition_is_false(check, frame, self->conditions, self->lock);
    Py_DECREF(check);
    if (false_here != DYNDBG_ANSWERED)
        return false_here;
    long offset = PyLong_AsLong(lasti);
    if (self->done_from >= 0 && offset >= self->done_from) {
        PyObject *trace = PyObject_GetAttr((PyObject *)frame, dyndbg_names.f_trace);   /* owned */
        int mine = trace == (PyObject *)self;
        Py_XDECREF(trace);
        if (trace == NULL)
            return DYNDBG_ERROR;
        if (mine && dyndbg_book_release(self->book, (PyObject *)frame) < 0)
            return DYNDBG_ERROR;
    }
    return DYNDBG_ANSWERED;
}

/* DYNDBG_ANSWERED (None), DYNDBG_SLOW_PATH, or DYNDBG_ERROR */
static dyndbg_decision
line_decision(LineFilter *self, PyFrameObject *frame, PyObject *event)
{
    int opcode = dyndbg_is_event(event, dyndbg_names.opcode);
    if (!opcode && !dyndbg_is_event(event, dyndbg_names.line))
        return DYNDBG_SLOW_PATH;
    PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(frame));      /* owned */
    if (lasti == NULL)
        return DYNDBG_ERROR;
    dyndbg_truth armed = PySet_Contains(self->offsets, lasti);
    dyndbg_decision answered = DYNDBG_ERROR;
    if (armed == DYNDBG_ERROR)
        goto done;
    if (opcode) {
        if (armed && (answered = false_condition(self, frame, lasti)) != DYNDBG_ANSWERED)
            goto done;
        answered = dyndbg_count_event(self->events, dyndbg_names.instruction) < 0
            ? DYNDBG_ERROR : DYNDBG_ANSWERED;
        goto done;
    }
    dyndbg_truth hot = dyndbg_line_is_hot(self, lasti);
    if (hot == DYNDBG_ERROR)
        goto done;
    if (PyObject_SetAttr((PyObject *)frame, dyndbg_names.f_trace_opcodes,
                         hot ? Py_True : Py_False) < 0)
        goto done;
    /* the opcode event for this instruction follows if hot; an armed one
     * that the line event reaches is handled here as its opcode */
    if (!hot && armed && (answered = false_condition(self, frame, lasti)) != DYNDBG_ANSWERED)
        goto done;
    answered = dyndbg_count_event(self->events, dyndbg_names.line) < 0
        ? DYNDBG_ERROR : DYNDBG_ANSWERED;
done:
    Py_DECREF(lasti);
    return answered;
}

static PyObject *
line_filter_call(LineFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (line_decision(self, (PyFrameObject *)args[0], args[1]) == DYNDBG_ANSWERED)
        Py_RETURN_NONE;
    return dyndbg_hand_over(self->slow, args);
}

FILTER_TYPE(LineFilter,
            Py_VISIT(self->offsets); Py_VISIT(self->hot_lines); Py_VISIT(self->line_of);
            Py_VISIT(self->checks); Py_VISIT(self->conditions); Py_VISIT(self->lock);
            Py_VISIT(self->sink); Py_VISIT(self->book);
            Py_VISIT(self->events); Py_VISIT(self->slow);,
            Py_CLEAR(self->offsets); Py_CLEAR(self->hot_lines); Py_CLEAR(self->line_of);
            Py_CLEAR(self->checks); Py_CLEAR(self->conditions); Py_CLEAR(self->lock);
            Py_CLEAR(self->sink); Py_CLEAR(self->book);
            Py_CLEAR(self->events); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(LineFilter, "a _line_tracer's filter (settrace.py)")

PyObject *
dyndbg_line_filter(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *offsets, *hot_lines, *line_of, *checks, *conditions, *lock, *sink, *book,
        *events, *slow;     /* borrowed */
    int all_opcodes;
    Py_ssize_t done_from;
    if (!PyArg_ParseTuple(args, "OOO!pnO!OOOO!O!O", &offsets, &hot_lines, &PyDict_Type, &line_of,
                          &all_opcodes, &done_from, &PyDict_Type, &checks, &conditions, &lock,
                          &sink, &DyndbgFrameBook_Type, &book, &PyDict_Type, &events, &slow))
        return NULL;
    if (!PyAnySet_Check(offsets) || !PyAnySet_Check(hot_lines))
        return PyErr_Format(PyExc_TypeError, "line_filter: offsets and hot_lines are sets");
    LineFilter *self = PyObject_GC_New(LineFilter, &DyndbgLineFilter_Type);     /* owned */
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
