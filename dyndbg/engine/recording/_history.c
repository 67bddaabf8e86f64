/* The compiled recording loop: History.record (history.py) in C.
 *
 * `record on` runs this before every generated instruction: read the frame's
 * slots (cpython/_frames.c, through its capsule), open closure cells, find
 * which slots hold what the frame's previous record kept (recorded_values.
 * slot_sources: the same object at the same or another slot, unchanged),
 * keep the others (_keeping.h; the tokens' checks are _tokens.h), and
 * append the Record; the frame's Track (_track.h) holds what its next
 * record may reuse. The Recorder's fields and set-up are _recorder.h.
 * history.py's Python code is the reference and the fallback; this file
 * does the same steps in the same order, so both give equal records.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"
#include "_keeping.h"
#include "_recorder.h"
#include "_track.h"

typedef PyObject *(*read_at_event_fn)(PyObject *frame, PyObject *depths, int with_locals);
static read_at_event_fn read_at_event;

/* record()'s results, as history.py's RecordResult (CHECK_BOUNDS: past a
 * bound, History._trim must run) */
enum { RECORDED = 0, CHECK_BOUNDS = 1, UNREADABLE = 2, NOT_AN_INSTRUCTION = 3 };

static PyObject *str_opname, *str_keeper, *str_bytes, *str_limits, *str_memory_bytes,
    *str_dropped, *str_dropped_since_sweep, *str_sweep_after;

/* tuple(list[start:]) or tuple(list[start:stop]), without the list between */
static PyObject *
list_part(PyObject *list, Py_ssize_t start, Py_ssize_t stop)
{
    if (stop > PyList_GET_SIZE(list))
        stop = PyList_GET_SIZE(list);
    if (start > stop)
        start = stop;
    PyObject *part = PyTuple_New(stop - start);
    for (Py_ssize_t i = start; part != NULL && i < stop; i++)
        PyTuple_SET_ITEM(part, i - start, Py_NewRef(PyList_GET_ITEM(list, i)));
    return part;
}

/* The first items of `list` are those of `tuple`, the same objects. */
static int
same_prefix(PyObject *list, PyObject *tuple)
{
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    if (PyList_GET_SIZE(list) < n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_GET_ITEM(list, i) != PyTuple_GET_ITEM(tuple, i))
            return 0;
    return 1;
}

/* record(frame, spec) -> RecordResult value; spec = (entry, instructions by
 * offset, number of local slots, celled slot indices, depths or None). */
static PyObject *
recorder_record(Recorder *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* The spec is a NamedTuple: read as a tuple (PyArg_ParseTuple's "(...)"
     * reads a tuple subclass through __getitem__, a Python call an item). */
    if (nargs != 2 || !PyFrame_Check(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != 5) {
        PyErr_SetString(PyExc_TypeError, "record(frame, spec): spec is a 5-tuple");
        return NULL;
    }
    PyObject *frame = args[0], *spec = args[1];
    PyObject *entry = PyTuple_GET_ITEM(spec, 0), *instructions = PyTuple_GET_ITEM(spec, 1),
        *celled = PyTuple_GET_ITEM(spec, 3), *depths = PyTuple_GET_ITEM(spec, 4);
    Py_ssize_t names = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 2));
    if (names == -1 && PyErr_Occurred())
        return NULL;
    if (!PyDict_Check(instructions) || !PyTuple_Check(celled)) {
        PyErr_SetString(PyExc_TypeError, "record(frame, spec): a spec field's type is wrong");
        return NULL;
    }
    PyObject *result = NULL, *slots = NULL, *key = NULL, *track = NULL, *seq = NULL,
        *previous = NULL, *kept = NULL, *tokens = NULL, *opname = NULL, *local_values = NULL,
        *stack = NULL, *caller = NULL, *globals = NULL, *record = NULL;
    Py_ssize_t *sources = NULL;
    int status = RECORDED;

    PyObject *offset = PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)frame));
    if (offset == NULL)
        return NULL;
    PyObject *instr = PyDict_GetItemWithError(instructions, offset);    /* borrowed */
    Py_DECREF(offset);
    if (instr == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyLong_FromLong(NOT_AN_INSTRUCTION);
    }
    Py_INCREF(instr);
    slots = read_at_event(frame, depths, 1);
    if (slots == NULL) {
        if (!PyErr_ExceptionMatches(self->unavailable))
            goto done;
        PyErr_Clear();
        result = PyLong_FromLong(UNREADABLE);
        goto done;
    }
    /* A cell or free slot holds a cell: its contents are the value (NULL if empty). */
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(celled); c++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(celled, c));
        if (i == -1 && PyErr_Occurred())
            goto done;
        if (i < 0 || i >= PyList_GET_SIZE(slots))
            continue;
        PyObject *value = PyList_GET_ITEM(slots, i);
        if (Py_IS_TYPE(value, &PyCell_Type)) {
            PyObject *contents = PyCell_Get(value);
            if (contents == NULL && PyErr_Occurred())
                goto done;
            PyList_SetItem(slots, i, contents ? contents : Py_NewRef(self->null_object));
        }
    }
    key = PyLong_FromVoidPtr(frame);
    if (key == NULL)
        goto done;
    track = Py_XNewRef(PyDict_GetItemWithError(self->tracks, key));
    if (track == NULL) {
        if (PyErr_Occurred())
            goto done;
        track = PyObject_CallOneArg(self->new_track, frame);
        if (track == NULL)
            goto done;
    }
    if (!Py_IS_TYPE(track, &TrackType)) {
        PyErr_SetString(PyExc_TypeError, "history: a track is not a compiled Track");
        goto done;
    }
    Track *t = (Track *)track;
    seq = PyLong_FromSsize_t(self->next);
    if (seq == NULL || !(previous = track_list(t->raw, "raw")) ||
        !(kept = track_list(t->kept, "kept")) || !(tokens = track_list(t->tokens, "tokens")) ||
        !(opname = Py_XNewRef(t->opname)))
        goto done;
    int settled = PySet_Contains(self->settled_after, opname);
    if (settled < 0)
        goto done;
    Py_ssize_t count = PyList_GET_SIZE(slots);
    sources = PyMem_New(Py_ssize_t, count ? count : 1);
    if (sources == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t moved = slot_sources(&self->keeping, slots, previous, tokens, settled, seq, sources);
    int anew = 0;
    if (moved < 0)
        goto done;
    if (moved || PyList_GET_SIZE(kept) != count) {
        if (keep_all(&self->keeping, slots, kept, tokens, sources, seq, &anew) < 0)
            goto done;
    }
    Py_XSETREF(t->raw, Py_NewRef(slots));
    Py_SETREF(opname, PyObject_GetAttr(instr, str_opname));
    if (opname == NULL)
        goto done;
    Py_XSETREF(t->opname, Py_NewRef(opname));
    if (names > PyList_GET_SIZE(kept))
        names = PyList_GET_SIZE(kept);
    /* The same kept objects as the previous record's: its tuple, shared. */
    PyObject *old_locals = Py_XNewRef(t->locals);
    if (old_locals != NULL && PyTuple_Check(old_locals) && PyTuple_GET_SIZE(old_locals) == names &&
        same_prefix(kept, old_locals))
        local_values = old_locals;
    else {
        Py_XDECREF(old_locals);
        local_values = list_part(kept, 0, names);
        if (local_values == NULL)
            goto done;
    }
    Py_XSETREF(t->locals, Py_NewRef(local_values));
    Py_XSETREF(t->newest, Py_NewRef(seq));
    stack = list_part(kept, names, PY_SSIZE_T_MAX);
    if (stack == NULL || !(caller = Py_XNewRef(t->caller))) {
        if (stack != NULL)
            PyErr_SetString(PyExc_TypeError, "history: a track has no caller");
        goto done;
    }
    globals = PyFrame_GetGlobals((PyFrameObject *)frame);
    if (globals == NULL)
        goto done;
    /* tuple.__new__(Record, fields), as history.py makes it: tuple's own
     * constructor sets up what a tuple of this Python keeps beside its items. */
    PyObject *fields = PyTuple_Pack(8, seq, key, entry, instr, stack, local_values, caller,
                                    globals);
    PyObject *new_args = fields ? PyTuple_Pack(1, fields) : NULL;
    Py_XDECREF(fields);
    if (new_args == NULL)
        goto done;
    record = PyTuple_Type.tp_new((PyTypeObject *)self->record_type, new_args, NULL);
    Py_DECREF(new_args);
    if (record == NULL)
        goto done;
    /* No record is in a reference cycle (it holds kept values, its code's
     * entry and instruction, the module's globals; nothing holds a record
     * but the history): the garbage collector need not walk the hundreds of
     * thousands a history holds, as it skips tuples of atomic values. */
    untrack(record);
    untrack(stack);
    untrack(local_values);
    PyObject *appended = PyObject_CallOneArg(self->append, record);
    if (appended == NULL)
        goto done;
    Py_DECREF(appended);
    self->next++;
    Py_ssize_t limit = self->size, held = PyObject_Size(self->records);
    if (held == -1)
        goto done;
    int over = 0;
    if (held > limit && limit >= 0) {
        /* History._drop(held - limit) here, without a Python call; the
         * sweep it leads to stays History._trim's (CHECK_BOUNDS when due). */
        for (Py_ssize_t k = limit; k < held; k++) {
            PyObject *gone = PyObject_CallNoArgs(self->popleft);
            if (gone == NULL)
                goto done;
            Py_DECREF(gone);
        }
        if (attribute_add(self->history, str_dropped, held - limit) < 0 ||
            attribute_add(self->history, str_dropped_since_sweep, held - limit) < 0)
            goto done;
        over = attribute_greater(self->history, str_dropped_since_sweep, str_sweep_after);
        if (over < 0)
            goto done;
    }
    if (!over && anew) {
        /* keep() may have copied a tensor: History._trim's other bound */
        PyObject *keeper = PyObject_GetAttr(self->history, str_keeper);
        PyObject *bytes = keeper ? PyObject_GetAttr(keeper, str_bytes) : NULL;
        PyObject *limits = keeper ? PyObject_GetAttr(keeper, str_limits) : NULL;
        PyObject *memory = limits ? PyObject_GetAttr(limits, str_memory_bytes) : NULL;
        over = bytes && memory ? PyObject_RichCompareBool(bytes, memory, Py_GT) : -1;
        Py_XDECREF(keeper);
        Py_XDECREF(bytes);
        Py_XDECREF(limits);
        Py_XDECREF(memory);
        if (over < 0)
            goto done;
    }
    status = over ? CHECK_BOUNDS : RECORDED;
    result = PyLong_FromLong(status);
done:
    PyMem_Free(sources);
    Py_XDECREF(instr);
    Py_XDECREF(slots);
    Py_XDECREF(key);
    Py_XDECREF(track);
    Py_XDECREF(seq);
    Py_XDECREF(previous);
    Py_XDECREF(kept);
    Py_XDECREF(tokens);
    Py_XDECREF(opname);
    Py_XDECREF(local_values);
    Py_XDECREF(stack);
    Py_XDECREF(caller);
    Py_XDECREF(globals);
    Py_XDECREF(record);
    return result;
}

/* slot_sources(values, previous, tokens, settled, seq) as recorded_values
 * returns it (pairs flattened): for the tests that compare the two. */
static PyObject *
recorder_slot_sources(Recorder *self, PyObject *args)
{
    PyObject *values, *previous, *tokens, *seq;
    int settled;
    if (!PyArg_ParseTuple(args, "O!O!O!pO", &PyList_Type, &values, &PyList_Type, &previous,
                          &PyList_Type, &tokens, &settled, &seq))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(values);
    Py_ssize_t *sources = PyMem_New(Py_ssize_t, count ? count : 1);
    if (sources == NULL)
        return PyErr_NoMemory();
    PyObject *pairs = NULL;
    if (slot_sources(&self->keeping, values, previous, tokens, settled, seq, sources) >= 0 &&
        (pairs = PyList_New(0)) != NULL) {
        for (Py_ssize_t i = 0; i < count && i < PyList_GET_SIZE(values); i++) {
            if (sources[i] == i)
                continue;
            PyObject *pair = Py_BuildValue("(nn)", i, sources[i]);
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
 * the tests that compare it with ValueKeeper.keep. */
static PyObject *
recorder_keep(Recorder *self, PyObject *args)
{
    PyObject *value, *seq, *kept, *token;
    int anew = 0;
    if (!PyArg_ParseTuple(args, "OO", &value, &seq) ||
        keep_value(&self->keeping, value, seq, 0, &kept, &token, &anew) < 0)
        return NULL;
    PyObject *pair = PyTuple_Pack(2, kept, token);
    Py_DECREF(kept);
    Py_DECREF(token);
    return pair;
}

/* untrack(obj): what the keeper made (a container of kept values, a
 * Summary) holds no cycle; the garbage collector need not walk it. */
static PyObject *
untrack_py(PyObject *module, PyObject *object)
{
    untrack(object);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"untrack", untrack_py, METH_O, "untrack(obj): the garbage collector no longer walks obj"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef recorder_methods[] = {
    {"record", (PyCFunction)(void (*)(void))recorder_record, METH_FASTCALL,
     "record(frame, spec) -> RecordResult value (history.py)"},
    {"keep", (PyCFunction)recorder_keep, METH_VARARGS,
     "keep(value, seq) -> (kept, token), as a slot's value is kept (recorded_values.py)"},
    {"slot_sources", (PyCFunction)recorder_slot_sources, METH_VARARGS,
     "slot_sources(values, previous, tokens, settled, seq) -> [i, j, ...]"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecorderType = {
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

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "dyndbg.engine.recording._history",
    "dyndbg's compiled recording loop (see history.py).", -1, module_methods,
};

static int
intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC
PyInit__history(void)
{
    if (keeping_intern() < 0 || recorder_intern() < 0 || intern(&str_opname, "opname") ||
        intern(&str_keeper, "_keeper") || intern(&str_bytes, "bytes") ||
        intern(&str_limits, "limits") || intern(&str_memory_bytes, "memory_bytes") ||
        intern(&str_dropped, "dropped") ||
        intern(&str_dropped_since_sweep, "_dropped_since_sweep") ||
        intern(&str_sweep_after, "_sweep_after"))
        return NULL;
    void **api = PyCapsule_Import("dyndbg.cpython._frames.API", 0);
    if (api == NULL)
        return NULL;
    read_at_event = (read_at_event_fn)api[0];
    if (PyType_Ready(&RecorderType) < 0 || PyType_Ready(&TrackType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObject(m, "Recorder", Py_NewRef((PyObject *)&RecorderType)) < 0 ||
        PyModule_AddObject(m, "Track", Py_NewRef((PyObject *)&TrackType)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
