/* The ReturnFilter (see _settrace.c): before _local_trace for a frame
 * traced for its calls, it books the frame's return while continuing. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"
#include "_fast_paths.h"
#include "_filters.h"
#include "_interned.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    FrameBook *book;        /* the tracer's */
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
 * DYNDBG_ANSWERED (None), DYNDBG_SLOW_PATH, or DYNDBG_ERROR */
static dyndbg_decision
return_decision(ReturnFilter *self, PyFrameObject *frame, PyObject *event)
{
    if (!dyndbg_is_event(event, dyndbg_names.return_))
        return DYNDBG_SLOW_PATH;
    FrameBook *book = self->book;       /* borrowed */
    if (dyndbg_lock_acquire(book->lock) < 0)
        return DYNDBG_ERROR;
    dyndbg_decision answered = DYNDBG_ERROR;
    /* after waiting while dyndbg was stopped in another thread: it may have
     * detached, or begun stepping or `trace on` */
    dyndbg_truth busy = dyndbg_attribute_true(self->sink, dyndbg_names.detached);
    if (busy == DYNDBG_FALSE)
        busy = dyndbg_attribute_true(self->policy, dyndbg_names.stepping);
    if (busy != DYNDBG_FALSE) {     /* _dispatch's to do */
        answered = busy == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_SLOW_PATH;
    } else if (dyndbg_count_event(self->events, dyndbg_names.return_) == DYNDBG_OK &&
               dyndbg_book_drop(book, (PyObject *)frame) == DYNDBG_OK &&
               dyndbg_book_forget(book, (PyObject *)frame) == DYNDBG_OK) {
        PyObject *idle = PyList_GET_SIZE(book->active) ? Py_NewRef(Py_None)
                                                        : PyObject_CallNoArgs(self->idle);
        Py_XDECREF(idle);       /* owned */
        answered = idle != NULL ? DYNDBG_ANSWERED : DYNDBG_ERROR;
    }
    if (dyndbg_lock_release(book->lock) < 0)
        return DYNDBG_ERROR;
    if (answered == DYNDBG_ANSWERED && dyndbg_book_maybe_remove(book) < 0)
        return DYNDBG_ERROR;
    return answered;
}

static PyObject *
return_filter_call(ReturnFilter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL || !PyFrame_Check(args[0]))
        return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
    if (return_decision(self, (PyFrameObject *)args[0], args[1]) == DYNDBG_ANSWERED)
        Py_RETURN_NONE;
    return dyndbg_hand_over(self->slow, args);
}

FILTER_TYPE(ReturnFilter,
            Py_VISIT(self->book); Py_VISIT(self->policy); Py_VISIT(self->sink);
            Py_VISIT(self->events); Py_VISIT(self->idle); Py_VISIT(self->slow);,
            Py_CLEAR(self->book); Py_CLEAR(self->policy); Py_CLEAR(self->sink);
            Py_CLEAR(self->events); Py_CLEAR(self->idle); Py_CLEAR(self->slow);)

FILTER_TYPE_OBJECT(ReturnFilter, "_local_trace's filter for a frame traced for its calls")

PyObject *
dyndbg_return_filter(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *book, *policy, *sink, *events, *idle, *slow;     /* borrowed */
    if (!PyArg_ParseTuple(args, "O!OOO!OO", &DyndbgFrameBook_Type, &book, &policy, &sink,
                          &PyDict_Type, &events, &idle, &slow))
        return NULL;
    ReturnFilter *self = PyObject_GC_New(ReturnFilter, &DyndbgReturnFilter_Type);     /* owned */
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
