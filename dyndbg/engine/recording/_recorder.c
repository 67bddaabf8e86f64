/* The compiled History's Recorder object (_recorder.h): its set-up from
 * History.__init__'s arguments, its garbage-collector hooks, its members
 * and methods, the type. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>        /* offsetof */

#include "../../cpython/_members.h"
#include "_recorder.h"

static PyObject *str_append, *str_popleft;      /* interned, owned */

dyndbg_status
dyndbg_recorder_intern(void)
{
    return dyndbg_intern(&str_append, "append") || dyndbg_intern(&str_popleft, "popleft")
        ? DYNDBG_ERROR : DYNDBG_OK;
}

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

/* Recorder(history, records, ...): 0, or -1 with an error set (tp_init's contract) */
static int
recorder_init(Recorder *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"history", "records", "tracks", "new_track", "keep", "record_type",
                            "settled_after", "null", "unavailable", "copy_type", "volatile",
                            "as_is", "copies", "tensor_types", "items_type", "container_bounds",
                            NULL};
    PyObject *v[12], *copies = NULL, *tensor_types = NULL, *items_type = NULL,
        *container_bounds = NULL;     /* borrowed */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OOOOOOOOO!|O!O!OO!", names, &v[0],
                                     &v[1], &PyDict_Type, &v[2], &v[3], &v[4], &v[5], &v[6],
                                     &v[7], &v[8], &v[9], &v[10], &PyFrozenSet_Type, &v[11],
                                     &PyDict_Type, &copies, &PyFrozenSet_Type, &tensor_types,
                                     &items_type, &PyTuple_Type, &container_bounds))
        return -1;
    Py_ssize_t bounds[CONTAINER_BOUNDS_FIELDS] = {0, 0};
    if (container_bounds != NULL) {
        if (PyTuple_GET_SIZE(container_bounds) != CONTAINER_BOUNDS_FIELDS) {
            PyErr_SetString(PyExc_TypeError, "Recorder: container_bounds is (items, depth)");
            return -1;
        }
        for (Py_ssize_t i = 0; i < CONTAINER_BOUNDS_FIELDS; i++) {
            bounds[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(container_bounds, i));
            if (bounds[i] == -1 && PyErr_Occurred())
                return -1;
        }
    }
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
        self->keeping.container_items = bounds[CONTAINER_BOUNDS_ITEMS];
        self->keeping.container_depth = bounds[CONTAINER_BOUNDS_DEPTH];
    }
    return dyndbg_keeping_fields(&self->keeping);
}

static PyMemberDef recorder_members[] = {
    {"next", Py_T_PYSSIZET, offsetof(Recorder, next), 0, "the seq of the next record"},
    {"size", Py_T_PYSSIZET, offsetof(Recorder, size), 0, "History.size, set by resize"},
    {NULL},
};

/* slot_sources(values, previous, tokens, settled, seq) as recorded_values
 * returns it (pairs flattened): for the tests that compare the two. The list
 * (owned), or NULL with an error set. */
static PyObject *
recorder_slot_sources(Recorder *self, PyObject *args)
{
    PyObject *values, *previous, *tokens, *seq;       /* borrowed */
    int settled;
    if (!PyArg_ParseTuple(args, "O!O!O!pO", &PyList_Type, &values, &PyList_Type, &previous,
                          &PyList_Type, &tokens, &settled, &seq))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(values);
    Py_ssize_t *sources = PyMem_New(Py_ssize_t, count ? count : 1);
    if (sources == NULL)
        return PyErr_NoMemory();
    PyObject *pairs = NULL;     /* owned */
    if (dyndbg_slot_sources(&self->keeping, values, previous, tokens, settled, seq, sources) >= 0 &&
        (pairs = PyList_New(0)) != NULL) {
        for (Py_ssize_t i = 0; i < count && i < PyList_GET_SIZE(values); i++) {
            if (sources[i] == i)
                continue;
            PyObject *pair = Py_BuildValue("(nn)", i, sources[i]);     /* owned */
            if (pair == NULL || PyList_SetSlice(pairs, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, pair) < 0) {
                Py_XDECREF(pair);
                Py_CLEAR(pairs);
                break;
            }
            Py_DECREF(pair);
        }
    }
    PyMem_Free(sources);
    return pairs;
}

/* keep(value, seq) -> (kept, token), as keep_all keeps a slot's value: for
 * the tests that compare it with ValueKeeper.keep. The pair, a tuple in
 * Kept's order (owned), or NULL with an error set. */
static PyObject *
recorder_keep(Recorder *self, PyObject *args)
{
    PyObject *value, *seq;      /* borrowed */
    PyObject *kept, *token;     /* owned, then the pair's */
    int anew = 0;
    if (!PyArg_ParseTuple(args, "OO", &value, &seq) ||
        dyndbg_keep_value(&self->keeping, value, seq, 0, &kept, &token, &anew) < 0)
        return NULL;
    PyObject *pair = PyTuple_New(KEPT_FIELDS);      /* owned */
    if (pair == NULL) {
        Py_DECREF(kept);
        Py_DECREF(token);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, KEPT_VALUE, kept);
    PyTuple_SET_ITEM(pair, KEPT_TOKEN, token);
    return pair;
}

static PyMethodDef recorder_methods[] = {
    {"record", (PyCFunction)(void (*)(void))dyndbg_recorder_record, METH_FASTCALL,
     "record(frame, spec) -> RecordResult value (history.py)"},
    {"keep", (PyCFunction)recorder_keep, METH_VARARGS,
     "keep(value, seq) -> (kept, token), as a slot's value is kept (recorded_values.py)"},
    {"slot_sources", (PyCFunction)recorder_slot_sources, METH_VARARGS,
     "slot_sources(values, previous, tokens, settled, seq) -> [i, j, ...]"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject DyndbgRecorder_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyndbg.engine.recording._history.Recorder",
    .tp_doc = "History.record in C, bound to one History",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)recorder_init,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_traverse = (traverseproc)recorder_traverse,
    .tp_clear = (inquiry)recorder_clear,
    .tp_methods = recorder_methods,
    .tp_members = recorder_members,
};
