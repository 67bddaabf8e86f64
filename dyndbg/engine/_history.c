/* The compiled recording loop: History.record (history.py) in C.
 *
 * `record on` runs this before every generated instruction: read the frame's
 * slots (cpython/_frames.c, through its capsule), open closure cells, find
 * which slots hold what the frame's previous record kept (recorded_values.
 * slot_sources: the same object at the same or another slot, unchanged),
 * keep the others through the Python ValueKeeper, and append the Record.
 * history.py's Python code is the reference and the fallback; this file
 * does the same steps in the same order, so both give equal records.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "_attributes.h"

typedef PyObject *(*read_at_event_fn)(PyObject *frame, PyObject *depths, int with_locals);
static read_at_event_fn read_at_event;

/* record()'s results, as history.py's RecordResult (CHECK_BOUNDS: past a
 * bound, History._trim must run) */
enum { RECORDED = 0, CHECK_BOUNDS = 1, UNREADABLE = 2, NOT_AN_INSTRUCTION = 3 };

static PyObject *str_version, *str_tensor_version, *str_last, *str_holds, *str_raw, *str_kept,
    *str_tokens, *str_opname, *str_locals, *str_newest, *str_caller, *str_next, *str_size,
    *str_append, *str_keeper, *str_bytes, *str_limits, *str_memory_bytes, *str_popleft,
    *str_dropped, *str_dropped_since_sweep, *str_sweep_after;

typedef struct {
    PyObject_HEAD
    PyObject *history;          /* the History (its _next and size) */
    PyObject *records;          /* its deque */
    PyObject *tracks;           /* its dict id(frame) -> _Track */
    PyObject *new_track;        /* History._new_track(frame) -> _Track, registered */
    PyObject *keep;             /* ValueKeeper.keep(value, seq) -> (kept, token) */
    PyObject *record_type;      /* Record */
    PyObject *settled_after;    /* KEEPS_VALUES_OPNAMES */
    PyObject *null_object;      /* cpython.NULL */
    PyObject *unavailable;      /* cpython.StackUnavailable */
    PyObject *copy_type;        /* recorded_values._Copy */
    PyObject *volatile_token;   /* recorded_values.VOLATILE */
    PyObject *as_is;            /* recorded_values.AS_IS: kept as they are, no token */
} Recorder;

static int
recorder_traverse(Recorder *self, visitproc visit, void *arg)
{
    Py_VISIT(self->history);
    Py_VISIT(self->records);
    Py_VISIT(self->tracks);
    Py_VISIT(self->new_track);
    Py_VISIT(self->keep);
    Py_VISIT(self->record_type);
    Py_VISIT(self->settled_after);
    Py_VISIT(self->null_object);
    Py_VISIT(self->unavailable);
    Py_VISIT(self->copy_type);
    Py_VISIT(self->volatile_token);
    Py_VISIT(self->as_is);
    return 0;
}

static int
recorder_clear(Recorder *self)
{
    Py_CLEAR(self->history);
    Py_CLEAR(self->records);
    Py_CLEAR(self->tracks);
    Py_CLEAR(self->new_track);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->record_type);
    Py_CLEAR(self->settled_after);
    Py_CLEAR(self->null_object);
    Py_CLEAR(self->unavailable);
    Py_CLEAR(self->copy_type);
    Py_CLEAR(self->volatile_token);
    Py_CLEAR(self->as_is);
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
                            "as_is", NULL};
    PyObject *v[12];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!OOOOOOOOO!", names, &v[0], &v[1],
                                     &PyDict_Type, &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
                                     &v[8], &v[9], &v[10], &PyFrozenSet_Type, &v[11]))
        return -1;
    recorder_clear(self);
    self->history = Py_NewRef(v[0]);
    self->records = Py_NewRef(v[1]);
    self->tracks = Py_NewRef(v[2]);
    self->new_track = Py_NewRef(v[3]);
    self->keep = Py_NewRef(v[4]);
    self->record_type = Py_NewRef(v[5]);
    self->settled_after = Py_NewRef(v[6]);
    self->null_object = Py_NewRef(v[7]);
    self->unavailable = Py_NewRef(v[8]);
    self->copy_type = Py_NewRef(v[9]);
    self->volatile_token = Py_NewRef(v[10]);
    self->as_is = Py_NewRef(v[11]);
    return 0;
}

/* 1 when the token says `value` is as it was kept (its `last` then set to
 * seq), 0 when not, -1 on an error: recorded_values' token.holds(). */
static int
token_holds(Recorder *self, PyObject *token, PyObject *value, PyObject *seq)
{
    if (token == self->volatile_token)
        return 0;
    int holds;
    if ((PyObject *)Py_TYPE(token) == self->copy_type) {
        /* _Copy.holds, inline: its version is not None and equals _version now */
        PyObject *kept = PyObject_GetAttr(token, str_version);
        if (kept == NULL)
            return -1;
        if (kept == Py_None) {
            Py_DECREF(kept);
            return 0;
        }
        PyObject *now = PyObject_GetAttr(value, str_tensor_version);
        if (now == NULL) {
            Py_DECREF(kept);
            return -1;
        }
        holds = PyObject_RichCompareBool(kept, now, Py_EQ);
        Py_DECREF(kept);
        Py_DECREF(now);
    }
    else {
        PyObject *result = PyObject_CallMethodOneArg(token, str_holds, value);
        if (result == NULL)
            return -1;
        holds = PyObject_IsTrue(result);
        Py_DECREF(result);
    }
    if (holds == 1 && PyObject_SetAttr(token, str_last, seq) < 0)
        return -1;
    return holds;
}

/* recorded_values.slot_sources: fills sources[i] with i (kept as it was),
 * another previous slot j, or -1 (keep anew). Returns how many slots are not
 * kept as they were, or -1 on an error. */
static Py_ssize_t
slot_sources(Recorder *self, PyObject *values, PyObject *previous, PyObject *tokens,
             int settled, PyObject *seq, Py_ssize_t *sources)
{
    Py_ssize_t count = PyList_GET_SIZE(values), moved = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        Py_ssize_t known = PyList_GET_SIZE(previous), j = -1;
        if (i < known && PyList_GET_ITEM(previous, i) == value)
            j = i;
        else {
            /* the last slot holding it, as the dict in slot_sources finds */
            for (Py_ssize_t k = known - 1; k >= 0; k--) {
                if (PyList_GET_ITEM(previous, k) == value) {
                    j = k;
                    break;
                }
            }
        }
        if (j >= 0 && !settled) {
            if (j >= PyList_GET_SIZE(tokens))
                j = -1;
            else {
                PyObject *token = PyList_GET_ITEM(tokens, j);
                if (token != Py_None) {
                    Py_INCREF(token);
                    Py_INCREF(value);
                    int holds = token_holds(self, token, value, seq);
                    Py_DECREF(token);
                    Py_DECREF(value);
                    if (holds < 0)
                        return -1;
                    if (!holds)
                        j = -1;
                }
            }
        }
        sources[i] = j;
        if (j != i)
            moved++;
    }
    return moved;
}

/* ValueKeeper.keep_all with the sources found: kept[i] and tokens[i] of each
 * slot not kept as it was. *anew: whether keep() ran (the copies' bytes may
 * have grown). */
static int
keep_all(Recorder *self, PyObject *values, PyObject *kept, PyObject *tokens,
         const Py_ssize_t *sources, PyObject *seq, int *anew)
{
    Py_ssize_t count = PyList_GET_SIZE(values);
    PyObject *old_kept = PyList_GetSlice(kept, 0, PY_SSIZE_T_MAX);
    PyObject *old_tokens = PyList_GetSlice(tokens, 0, PY_SSIZE_T_MAX);
    int failed = old_kept == NULL || old_tokens == NULL ||
        PyList_SetSlice(kept, count, PY_SSIZE_T_MAX, NULL) < 0 ||
        PyList_SetSlice(tokens, count, PY_SSIZE_T_MAX, NULL) < 0;
    for (Py_ssize_t i = 0; i < count && !failed; i++) {
        Py_ssize_t j = sources[i];
        if (j == i)
            continue;
        PyObject *kept_value, *token;
        if (j >= 0) {
            if (j >= PyList_GET_SIZE(old_kept) || j >= PyList_GET_SIZE(old_tokens)) {
                PyErr_SetString(PyExc_RuntimeError, "history: a track's lists differ in length");
                failed = 1;
                break;
            }
            kept_value = Py_NewRef(PyList_GET_ITEM(old_kept, j));
            token = Py_NewRef(PyList_GET_ITEM(old_tokens, j));
        }
        else {
            PyObject *value = PyList_GET_ITEM(values, i);
            int as_is = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(value));
            if (as_is < 0) {
                failed = 1;
                break;
            }
            if (as_is) {    /* ValueKeeper.keep's first case, without the Python call */
                kept_value = Py_NewRef(value);
                token = Py_NewRef(Py_None);
                goto store;
            }
            *anew = 1;
            PyObject *pair = PyObject_CallFunctionObjArgs(self->keep, value, seq, NULL);
            if (pair == NULL || !PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                if (pair != NULL)
                    PyErr_SetString(PyExc_TypeError, "history: keep() gave no pair");
                Py_XDECREF(pair);
                failed = 1;
                break;
            }
            kept_value = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
            token = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
            Py_DECREF(pair);
        }
    store:
        if (i < PyList_GET_SIZE(kept) && i < PyList_GET_SIZE(tokens)) {
            PyList_SetItem(kept, i, kept_value);    /* steals */
            PyList_SetItem(tokens, i, token);
        }
        else {
            failed = PyList_Append(kept, kept_value) < 0 || PyList_Append(tokens, token) < 0;
            Py_DECREF(kept_value);
            Py_DECREF(token);
        }
    }
    Py_XDECREF(old_kept);
    Py_XDECREF(old_tokens);
    return failed ? -1 : 0;
}

/* Borrowed-to-new helpers for a track's attributes. */
static PyObject *
list_attr(PyObject *track, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(track, name);
    if (value != NULL && !PyList_CheckExact(value)) {
        PyErr_Format(PyExc_TypeError, "history: a track's %U is not a list", name);
        Py_CLEAR(value);
    }
    return value;
}

static int
same_items(PyObject *a, PyObject *b)
{
    Py_ssize_t n = PyTuple_GET_SIZE(a);
    if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyTuple_GET_ITEM(a, i) != PyTuple_GET_ITEM(b, i))
            return 0;
    return 1;
}

static void
untrack(PyObject *object)
{
    if (PyObject_GC_IsTracked(object))
        PyObject_GC_UnTrack(object);
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
        *stack = NULL, *caller = NULL, *globals = NULL, *fields = NULL, *record = NULL,
        *next = NULL, *size = NULL;
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
    seq = PyObject_GetAttr(self->history, str_next);
    if (seq == NULL || !(previous = list_attr(track, str_raw)) ||
        !(kept = list_attr(track, str_kept)) || !(tokens = list_attr(track, str_tokens)) ||
        !(opname = PyObject_GetAttr(track, str_opname)))
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
    Py_ssize_t moved = slot_sources(self, slots, previous, tokens, settled, seq, sources);
    int anew = 0;
    if (moved < 0)
        goto done;
    if (moved || PyList_GET_SIZE(kept) != count) {
        if (keep_all(self, slots, kept, tokens, sources, seq, &anew) < 0)
            goto done;
    }
    if (PyObject_SetAttr(track, str_raw, slots) < 0)
        goto done;
    Py_SETREF(opname, PyObject_GetAttr(instr, str_opname));
    if (opname == NULL || PyObject_SetAttr(track, str_opname, opname) < 0)
        goto done;
    if (names > PyList_GET_SIZE(kept))
        names = PyList_GET_SIZE(kept);
    PyObject *values = PyList_GetSlice(kept, 0, names);
    if (values == NULL)
        goto done;
    local_values = PyList_AsTuple(values);
    Py_DECREF(values);
    if (local_values == NULL)
        goto done;
    PyObject *old_locals = PyObject_GetAttr(track, str_locals);
    if (old_locals == NULL)
        goto done;
    if (PyTuple_Check(old_locals) && same_items(local_values, old_locals))
        Py_SETREF(local_values, old_locals);     /* the same kept objects: one tuple shared */
    else
        Py_DECREF(old_locals);
    if (PyObject_SetAttr(track, str_locals, local_values) < 0 ||
        PyObject_SetAttr(track, str_newest, seq) < 0)
        goto done;
    values = PyList_GetSlice(kept, names, PY_SSIZE_T_MAX);
    if (values == NULL)
        goto done;
    stack = PyList_AsTuple(values);
    Py_DECREF(values);
    if (stack == NULL || !(caller = PyObject_GetAttr(track, str_caller)))
        goto done;
    globals = PyFrame_GetGlobals((PyFrameObject *)frame);
    if (globals == NULL)
        goto done;
    fields = PyTuple_Pack(8, seq, key, entry, instr, stack, local_values, caller, globals);
    if (fields == NULL)
        goto done;
    /* tuple.__new__(Record, fields), as history.py makes it */
    PyObject *new_args = PyTuple_Pack(1, fields);
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
    PyObject *appended = PyObject_CallMethodOneArg(self->records, str_append, record);
    if (appended == NULL)
        goto done;
    Py_DECREF(appended);
    Py_ssize_t seq_value = PyLong_AsSsize_t(seq);
    if (seq_value == -1 && PyErr_Occurred())
        goto done;
    next = PyLong_FromSsize_t(seq_value + 1);
    if (next == NULL || PyObject_SetAttr(self->history, str_next, next) < 0)
        goto done;
    size = PyObject_GetAttr(self->history, str_size);
    if (size == NULL)
        goto done;
    Py_ssize_t limit = PyLong_AsSsize_t(size), held = PyObject_Size(self->records);
    if ((limit == -1 || held == -1) && PyErr_Occurred())
        goto done;
    int over = 0;
    if (held > limit && limit >= 0) {
        /* History._drop(held - limit) here, without a Python call; the
         * sweep it leads to stays History._trim's (CHECK_BOUNDS when due). */
        for (Py_ssize_t k = limit; k < held; k++) {
            PyObject *gone = PyObject_CallMethodNoArgs(self->records, str_popleft);
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
    Py_XDECREF(fields);
    Py_XDECREF(record);
    Py_XDECREF(next);
    Py_XDECREF(size);
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
    if (slot_sources(self, values, previous, tokens, settled, seq, sources) >= 0 &&
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
    {"slot_sources", (PyCFunction)recorder_slot_sources, METH_VARARGS,
     "slot_sources(values, previous, tokens, settled, seq) -> [i, j, ...]"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "dyndbg.engine._history.Recorder",
    .tp_doc = "History.record in C, bound to one History",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)recorder_init,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_traverse = (traverseproc)recorder_traverse,
    .tp_clear = (inquiry)recorder_clear,
    .tp_methods = recorder_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "dyndbg.engine._history",
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
    if (intern(&str_version, "version") || intern(&str_tensor_version, "_version") ||
        intern(&str_last, "last") || intern(&str_holds, "holds") || intern(&str_raw, "raw") ||
        intern(&str_kept, "kept") || intern(&str_tokens, "tokens") ||
        intern(&str_opname, "opname") || intern(&str_locals, "locals") ||
        intern(&str_newest, "newest") || intern(&str_caller, "caller") ||
        intern(&str_next, "_next") || intern(&str_size, "size") || intern(&str_append, "append") ||
        intern(&str_keeper, "_keeper") || intern(&str_bytes, "bytes") ||
        intern(&str_limits, "limits") || intern(&str_memory_bytes, "memory_bytes") ||
        intern(&str_popleft, "popleft") || intern(&str_dropped, "dropped") ||
        intern(&str_dropped_since_sweep, "_dropped_since_sweep") ||
        intern(&str_sweep_after, "_sweep_after"))
        return NULL;
    void **api = PyCapsule_Import("dyndbg.cpython._frames.API", 0);
    if (api == NULL)
        return NULL;
    read_at_event = (read_at_event_fn)api[0];
    if (PyType_Ready(&RecorderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObject(m, "Recorder", Py_NewRef((PyObject *)&RecorderType)) < 0) {
        Py_DECREF(&RecorderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
