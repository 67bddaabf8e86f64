/* The settrace mechanism's book of its traced frames (_framebook.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"
#include "_fast_paths.h"
#include "_framebook.h"
#include "_interned.h"

dyndbg_status
dyndbg_book_forget(FrameBook *book, PyObject *frame)
{
    PyObject *key = PyLong_FromVoidPtr(frame);    /* id(frame), owned */
    if (key == NULL)
        return DYNDBG_ERROR;
    int failed = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(book->keyed) && !failed; i++) {
        PyObject *keyed = PyTuple_GET_ITEM(book->keyed, i);     /* borrowed */
        if (PySet_Check(keyed)) {
            failed = PySet_Discard(keyed, key) < 0;
        } else {
            int has = PyDict_Contains(keyed, key);
            failed = has < 0 || (has && PyDict_DelItem(keyed, key) < 0);
        }
    }
    Py_DECREF(key);
    return failed ? DYNDBG_ERROR : DYNDBG_OK;
}

/* thread.frames = max(0, thread.frames + delta): the new count, or DYNDBG_ERROR */
static long
book_count(FrameBook *book, long delta)
{
    PyObject *now = PyObject_GetAttr(book->thread, dyndbg_names.frames);    /* owned */
    if (now == NULL)
        return DYNDBG_ERROR;
    long frames = PyLong_AsLong(now);
    Py_DECREF(now);
    if (frames == -1 && PyErr_Occurred())
        return DYNDBG_ERROR;
    if (delta == 0)
        return frames;
    frames = frames + delta < 0 ? 0 : frames + delta;
    PyObject *next = PyLong_FromLong(frames);      /* owned */
    if (next == NULL)
        return DYNDBG_ERROR;
    int failed = PyObject_SetAttr(book->thread, dyndbg_names.frames, next);
    Py_DECREF(next);
    return failed ? DYNDBG_ERROR : frames;
}

dyndbg_status
dyndbg_book_add(FrameBook *book, PyObject *frame)
{
    if (PyList_Append(book->active, frame) < 0)
        return DYNDBG_ERROR;
    return book_count(book, 1) < 0 ? DYNDBG_ERROR : DYNDBG_OK;
}

dyndbg_status
dyndbg_book_drop(FrameBook *book, PyObject *frame)
{
    for (Py_ssize_t i = PyList_GET_SIZE(book->active) - 1; i >= 0; i--) {
        if (PyList_GET_ITEM(book->active, i) == frame) {
            if (PyList_SetSlice(book->active, i, i + 1, NULL) < 0)
                return DYNDBG_ERROR;
            return book_count(book, -1) < 0 ? DYNDBG_ERROR : DYNDBG_OK;
        }
    }
    return DYNDBG_OK;
}

dyndbg_status
dyndbg_book_maybe_remove(FrameBook *book)
{
    long frames = book_count(book, 0);
    if (frames != 0)
        return frames < 0 ? DYNDBG_ERROR : DYNDBG_OK;
    dyndbg_truth callback = dyndbg_attribute_true(book->hooks, dyndbg_names.has_callback);
    if (callback != DYNDBG_TRUE)
        return callback == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_OK;
    dyndbg_truth installed = dyndbg_attribute_true(book->thread, dyndbg_names.installed);
    if (installed != DYNDBG_TRUE)
        return installed == DYNDBG_ERROR ? DYNDBG_ERROR : DYNDBG_OK;
    if (PyObject_SetAttr(book->thread, dyndbg_names.installed, Py_False) < 0)
        return DYNDBG_ERROR;
    PyEval_SetTrace(NULL, NULL);    /* sys.settrace(None) */
    return DYNDBG_OK;
}

dyndbg_status
dyndbg_book_release(FrameBook *book, PyObject *frame)
{
    if (PyObject_SetAttr(frame, dyndbg_names.f_trace_opcodes, Py_False) < 0 ||
        PyObject_SetAttr(frame, dyndbg_names.f_trace_lines, Py_False) < 0 ||
        PyObject_SetAttr(frame, dyndbg_names.f_trace, Py_None) < 0 ||
        dyndbg_book_drop(book, frame) < 0)
        return DYNDBG_ERROR;
    if (dyndbg_lock_acquire(book->lock) < 0)
        return DYNDBG_ERROR;
    dyndbg_status forgot = dyndbg_book_forget(book, frame);
    if (dyndbg_lock_release(book->lock) < 0 || forgot < 0)
        return DYNDBG_ERROR;
    return dyndbg_book_maybe_remove(book);
}

static int
FrameBook_traverse(FrameBook *self, visitproc visit, void *arg)
{
    Py_VISIT(self->active);
    Py_VISIT(self->thread);
    Py_VISIT(self->keyed);
    Py_VISIT(self->hooks);
    Py_VISIT(self->lock);
    return 0;
}

static int
FrameBook_clear(FrameBook *self)
{
    Py_CLEAR(self->active);
    Py_CLEAR(self->thread);
    Py_CLEAR(self->keyed);
    Py_CLEAR(self->hooks);
    Py_CLEAR(self->lock);
    return 0;
}

static void
FrameBook_dealloc(FrameBook *self)
{
    PyObject_GC_UnTrack(self);
    FrameBook_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject DyndbgFrameBook_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyndbg.engine.tracing._settrace.FrameBook",
    .tp_doc = "the settrace tracer's traced frames, kept from C (settrace.py)",
    .tp_basicsize = sizeof(FrameBook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)FrameBook_dealloc,
    .tp_traverse = (traverseproc)FrameBook_traverse,
    .tp_clear = (inquiry)FrameBook_clear,
};

PyObject *
dyndbg_frame_book(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *active, *thread, *keyed, *hooks, *lock;     /* borrowed */
    if (!PyArg_ParseTuple(args, "O!OO!OO", &PyList_Type, &active, &thread, &PyTuple_Type, &keyed,
                          &hooks, &lock))
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keyed); i++) {
        PyObject *item = PyTuple_GET_ITEM(keyed, i);     /* borrowed */
        if (!PyDict_Check(item) && !PySet_Check(item))
            return PyErr_Format(PyExc_TypeError, "frame_book: keyed holds dicts and sets");
    }
    FrameBook *self = PyObject_GC_New(FrameBook, &DyndbgFrameBook_Type);    /* owned */
    if (self == NULL)
        return NULL;
    self->active = Py_NewRef(active);
    self->thread = Py_NewRef(thread);
    self->keyed = Py_NewRef(keyed);
    self->hooks = Py_NewRef(hooks);
    self->lock = Py_NewRef(lock);
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
