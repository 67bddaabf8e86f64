/* The compiled History's Recorder object (_history.c): what it holds (the
 * History's deque, tracks and types, and its own seq and record-size), its
 * set-up from History.__init__'s arguments, and its garbage-collector
 * hooks. Included by _history.c alone. */
#ifndef DYNDBG_RECORDER_H
#define DYNDBG_RECORDER_H

#include <Python.h>
#include <stddef.h>        /* offsetof */

#include "../../cpython/_members.h"
#include "_keeping.h"

static PyObject *str_append, *str_popleft;

/* The names recorder_init reads, interned once (the module's init). */
static int
recorder_intern(void)
{
    return !(str_append = PyUnicode_InternFromString("append")) ||
           !(str_popleft = PyUnicode_InternFromString("popleft")) ? -1 : 0;
}

typedef struct {
    PyObject_HEAD
    Py_ssize_t next;            /* the seq of the next record (History.next_seq) */
    Py_ssize_t size;            /* History.size: the records held at most */
    PyObject *history;          /* the History (its dropped counts, its keeper) */
    PyObject *records;          /* its deque */
    PyObject *append, *popleft; /* the deque's methods, bound once */
    PyObject *tracks;           /* its dict id(frame) -> Track */
    PyObject *new_track;        /* History._new_track(frame) -> Track, registered */
    PyObject *record_type;      /* Record */
    PyObject *settled_after;    /* KEEPS_VALUES_OPNAMES */
    PyObject *null_object;      /* cpython.NULL */
    PyObject *unavailable;      /* cpython.StackUnavailable */
    Keeping keeping;            /* what keeping values needs (_keeping.h) */
} Recorder;

static int
recorder_traverse(Recorder *self, visitproc visit, void *arg)
{
    Py_VISIT(self->history);
    Py_VISIT(self->records);
    Py_VISIT(self->append);
    Py_VISIT(self->popleft);
    Py_VISIT(self->tracks);
    Py_VISIT(self->new_track);
    Py_VISIT(self->keeping.keep);
    Py_VISIT(self->record_type);
    Py_VISIT(self->settled_after);
    Py_VISIT(self->null_object);
    Py_VISIT(self->unavailable);
    Py_VISIT(self->keeping.copy_type);
    Py_VISIT(self->keeping.volatile_token);
    Py_VISIT(self->keeping.as_is);
    Py_VISIT(self->keeping.copies);
    Py_VISIT(self->keeping.tensor_types);
    Py_VISIT(self->keeping.items_type);
    return 0;
}

static int
recorder_clear(Recorder *self)
{
    Py_CLEAR(self->history);
    Py_CLEAR(self->records);
    Py_CLEAR(self->append);
    Py_CLEAR(self->popleft);
    Py_CLEAR(self->tracks);
    Py_CLEAR(self->new_track);
    Py_CLEAR(self->keeping.keep);
    Py_CLEAR(self->record_type);
    Py_CLEAR(self->settled_after);
    Py_CLEAR(self->null_object);
    Py_CLEAR(self->unavailable);
    Py_CLEAR(self->keeping.copy_type);
    Py_CLEAR(self->keeping.volatile_token);
    Py_CLEAR(self->keeping.as_is);
    Py_CLEAR(self->keeping.copies);
    Py_CLEAR(self->keeping.tensor_types);
    Py_CLEAR(self->keeping.items_type);
    return 0;
}

static void
recorder_dealloc(Recorder *self)
{
    PyObject_GC_UnTrack(self);
    recorder_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
recorder_init(Recorder *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"history", "records", "tracks", "new_track", "keep", "record_type",
                            "settled_after", "null", "unavailable", "copy_type", "volatile",
                            "as_is", "copies", "tensor_types", "items_type", "container_bounds",
                            NULL};
    PyObject *v[12], *copies = NULL, *tensor_types = NULL, *items_type = NULL;
    Py_ssize_t bounds[2] = {0, 0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OOOOOOOOO!|O!O!O(nn)", names, &v[0],
                                     &v[1], &PyDict_Type, &v[2], &v[3], &v[4], &v[5], &v[6],
                                     &v[7], &v[8], &v[9], &v[10], &PyFrozenSet_Type, &v[11],
                                     &PyDict_Type, &copies, &PyFrozenSet_Type, &tensor_types,
                                     &items_type, &bounds[0], &bounds[1]))
        return -1;
    if (!PyType_Check(v[5]) || !PyType_IsSubtype((PyTypeObject *)v[5], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Recorder: record_type is no tuple type");
        return -1;
    }
    recorder_clear(self);
    self->next = 0;
    self->size = PY_SSIZE_T_MAX;    /* until History sets its bound */
    self->history = Py_NewRef(v[0]);
    self->records = Py_NewRef(v[1]);
    self->append = PyObject_GetAttr(v[1], str_append);
    self->popleft = PyObject_GetAttr(v[1], str_popleft);
    if (self->append == NULL || self->popleft == NULL)
        return -1;
    self->tracks = Py_NewRef(v[2]);
    self->new_track = Py_NewRef(v[3]);
    self->keeping.keep = Py_NewRef(v[4]);
    self->record_type = Py_NewRef(v[5]);
    self->settled_after = Py_NewRef(v[6]);
    self->null_object = Py_NewRef(v[7]);
    self->unavailable = Py_NewRef(v[8]);
    self->keeping.copy_type = Py_NewRef(v[9]);
    self->keeping.volatile_token = Py_NewRef(v[10]);
    self->keeping.as_is = Py_NewRef(v[11]);
    if (items_type != NULL && !PyType_Check(items_type)) {
        PyErr_SetString(PyExc_TypeError, "Recorder: items_type is a class (_Items)");
        return -1;
    }
    if (copies != NULL && tensor_types != NULL && items_type != NULL) {
        self->keeping.copies = Py_NewRef(copies);
        self->keeping.tensor_types = Py_NewRef(tensor_types);
        self->keeping.items_type = Py_NewRef(items_type);
        self->keeping.container_items = bounds[0];
        self->keeping.container_depth = bounds[1];
    }
    return keeping_fields(&self->keeping);
}

static PyMemberDef recorder_members[] = {
    {"next", Py_T_PYSSIZET, offsetof(Recorder, next), 0, "the seq of the next record"},
    {"size", Py_T_PYSSIZET, offsetof(Recorder, size), 0, "History.size, set by resize"},
    {NULL},
};

#endif
