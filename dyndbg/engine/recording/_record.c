/* The compiled recording loop: History.record (history.py) in C.
 *
 * `record on` runs this before every generated instruction: read the frame's
 * slots (cpython/_frames.c, through its capsule), open closure cells, find
 * which slots hold what the frame's previous record kept (recorded_values.
 * slot_sources: the same object at the same or another slot, unchanged),
 * keep the others (_kept_values.h), and append the Record; the frame's
 * Track (_track.h) holds what its next record may reuse. history.py's
 * Python code is the reference and the fallback; this file does the same
 * steps in the same order, so both give equal records.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_attributes.h"
#include "_kept_values.h"
#include "_recorder.h"
#include "_track.h"

dyndbg_read_at_event_fn dyndbg_read_at_event;

static PyObject *str_opname, *str_keeper, *str_bytes, *str_limits, *str_memory_bytes,
    *str_dropped, *str_dropped_since_sweep, *str_sweep_after;     /* interned, owned */

dyndbg_status
dyndbg_record_intern(void)
{
    return dyndbg_intern(&str_opname, "opname") || dyndbg_intern(&str_keeper, "_keeper") ||
           dyndbg_intern(&str_bytes, "bytes") || dyndbg_intern(&str_limits, "limits") ||
           dyndbg_intern(&str_memory_bytes, "memory_bytes") ||
           dyndbg_intern(&str_dropped, "dropped") ||
           dyndbg_intern(&str_dropped_since_sweep, "_dropped_since_sweep") ||
           dyndbg_intern(&str_sweep_after, "_sweep_after") ? DYNDBG_ERROR : DYNDBG_OK;
}

/* tuple(list[start:]) or tuple(list[start:stop]), without the list between:
 * owned, or NULL with an error set */
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

/* record(frame, spec) -> RecordResult value; spec a RecordSpec (entry,
 * instructions by offset, number of local slots, celled slot indices, depths
 * or None). */
PyObject *
dyndbg_recorder_record(Recorder *self, PyObject *const *args, Py_ssize_t nargs)
{
    /* The spec is a NamedTuple: read as a tuple (PyArg_ParseTuple's "(...)"
     * reads a tuple subclass through __getitem__, a Python call an item). */
    if (nargs != 2 || !PyFrame_Check(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != RECORD_SPEC_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "record(frame, spec): spec is a 5-tuple");
        return NULL;
    }
    PyObject *frame = args[0], *spec = args[1];      /* borrowed */
    PyObject *entry = PyTuple_GET_ITEM(spec, RECORD_SPEC_ENTRY),     /* borrowed */
        *instructions = PyTuple_GET_ITEM(spec, RECORD_SPEC_INSTRUCTIONS),
        *celled = PyTuple_GET_ITEM(spec, RECORD_SPEC_CELLED),
        *depths = PyTuple_GET_ITEM(spec, RECORD_SPEC_DEPTHS);
    Py_ssize_t names = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, RECORD_SPEC_NAMES));
    if (names == -1 && PyErr_Occurred())
        return NULL;
    if (!PyDict_Check(instructions) || !PyTuple_Check(celled)) {
        PyErr_SetString(PyExc_TypeError, "record(frame, spec): a spec field's type is wrong");
        return NULL;
    }
    /* owned, each released at `done` */
    PyObject *result = NULL, *slots = NULL, *key = NULL, *track = NULL, *seq = NULL,
        *previous = NULL, *kept = NULL, *tokens = NULL, *opname = NULL, *local_values = NULL,
        *stack = NULL, *caller = NULL, *globals = NULL, *record = NULL;
    Py_ssize_t *sources = NULL;

    PyObject *offset = PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)frame));   /* owned */
    if (offset == NULL)
        return NULL;
    PyObject *instr = PyDict_GetItemWithError(instructions, offset);    /* borrowed */
    Py_DECREF(offset);
    if (instr == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyLong_FromLong(RECORD_RESULT_NOT_AN_INSTRUCTION);
    }
    Py_INCREF(instr);       /* owned from here */
    slots = dyndbg_read_at_event(frame, depths, 1);
    if (slots == NULL) {
        if (!PyErr_ExceptionMatches(self->unavailable))
            goto done;
        PyErr_Clear();
        result = PyLong_FromLong(RECORD_RESULT_UNREADABLE);
        goto done;
    }
    /* A cell or free slot holds a cell: its contents are the value (NULL if empty). */
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(celled); c++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(celled, c));
        if (i == -1 && PyErr_Occurred())
            goto done;
        if (i < 0 || i >= PyList_GET_SIZE(slots))
            continue;
        PyObject *value = PyList_GET_ITEM(slots, i);       /* borrowed */
        if (Py_IS_TYPE(value, &PyCell_Type)) {
            PyObject *contents = PyCell_Get(value);     /* owned */
            if (contents == NULL && PyErr_Occurred())
                goto done;
            PyList_SetItem(slots, i, contents ? contents : Py_NewRef(self->null_object));  /* steals */
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
    if (!Py_IS_TYPE(track, &DyndbgTrack_Type)) {
        PyErr_SetString(PyExc_TypeError, "history: a track is not a compiled Track");
        goto done;
    }
    Track *t = (Track *)track;      /* borrowed: `track` owns it */
    seq = PyLong_FromSsize_t(self->next);
    if (seq == NULL || !(previous = dyndbg_track_list(t->raw, "raw")) ||
        !(kept = dyndbg_track_list(t->kept, "kept")) ||
        !(tokens = dyndbg_track_list(t->tokens, "tokens")) || !(opname = Py_XNewRef(t->opname)))
        goto done;
    dyndbg_truth settled = PySet_Contains(self->settled_after, opname);
    if (settled == DYNDBG_ERROR)
        goto done;
    Py_ssize_t count = PyList_GET_SIZE(slots);
    sources = PyMem_New(Py_ssize_t, count ? count : 1);
    if (sources == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t moved =
        dyndbg_slot_sources(&self->keeping, slots, previous, tokens, settled, seq, sources);
    int anew = 0;
    if (moved == DYNDBG_ERROR)
        goto done;
    if (moved || PyList_GET_SIZE(kept) != count) {
        if (dyndbg_keep_all(&self->keeping, slots, kept, tokens, sources, seq, &anew) < 0)
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
    PyObject *old_locals = Py_XNewRef(t->locals);     /* owned */
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
    PyObject *fields = PyTuple_New(RECORD_FIELDS);      /* owned */
    if (fields != NULL) {
        PyTuple_SET_ITEM(fields, RECORD_SEQ, Py_NewRef(seq));
        PyTuple_SET_ITEM(fields, RECORD_FRAME_ID, Py_NewRef(key));
        PyTuple_SET_ITEM(fields, RECORD_ENTRY, Py_NewRef(entry));
        PyTuple_SET_ITEM(fields, RECORD_INSTR, Py_NewRef(instr));
        PyTuple_SET_ITEM(fields, RECORD_STACK, Py_NewRef(stack));
        PyTuple_SET_ITEM(fields, RECORD_SLOTS, Py_NewRef(local_values));
        PyTuple_SET_ITEM(fields, RECORD_CALLER, Py_NewRef(caller));
        PyTuple_SET_ITEM(fields, RECORD_GLOBALS, Py_NewRef(globals));
    }
    PyObject *new_args = fields ? PyTuple_Pack(1, fields) : NULL;     /* owned */
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
    dyndbg_untrack(record);
    dyndbg_untrack(stack);
    dyndbg_untrack(local_values);
    PyObject *appended = PyObject_CallOneArg(self->append, record);     /* owned */
    if (appended == NULL)
        goto done;
    Py_DECREF(appended);
    self->next++;
    Py_ssize_t limit = self->size, held = PyObject_Size(self->records);
    if (held == -1)
        goto done;
    dyndbg_truth over = DYNDBG_FALSE;
    if (held > limit && limit >= 0) {
        /* History._drop(held - limit) here, without a Python call; the
         * sweep it leads to stays History._trim's (CHECK_BOUNDS when due). */
        for (Py_ssize_t k = limit; k < held; k++) {
            PyObject *gone = PyObject_CallNoArgs(self->popleft);     /* owned */
            if (gone == NULL)
                goto done;
            Py_DECREF(gone);
        }
        if (dyndbg_attribute_add(self->history, str_dropped, held - limit) < 0 ||
            dyndbg_attribute_add(self->history, str_dropped_since_sweep, held - limit) < 0)
            goto done;
        over = dyndbg_attribute_greater(self->history, str_dropped_since_sweep, str_sweep_after);
        if (over == DYNDBG_ERROR)
            goto done;
    }
    if (over == DYNDBG_FALSE && anew) {
        /* keep() may have copied a tensor: History._trim's other bound (each owned) */
        PyObject *keeper = PyObject_GetAttr(self->history, str_keeper);
        PyObject *bytes = keeper ? PyObject_GetAttr(keeper, str_bytes) : NULL;
        PyObject *limits = keeper ? PyObject_GetAttr(keeper, str_limits) : NULL;
        PyObject *memory = limits ? PyObject_GetAttr(limits, str_memory_bytes) : NULL;
        over = bytes && memory ? PyObject_RichCompareBool(bytes, memory, Py_GT) : DYNDBG_ERROR;
        Py_XDECREF(keeper);
        Py_XDECREF(bytes);
        Py_XDECREF(limits);
        Py_XDECREF(memory);
        if (over == DYNDBG_ERROR)
            goto done;
    }
    result = PyLong_FromLong(over == DYNDBG_TRUE ? RECORD_RESULT_CHECK_BOUNDS
                                                 : RECORD_RESULT_RECORDED);
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
