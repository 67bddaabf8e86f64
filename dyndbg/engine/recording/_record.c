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

/* record()'s arguments: the frame and its spec's fields (borrowed) */
typedef struct {
    PyObject *frame;
    PyObject *entry, *instructions, *celled, *depths;
    Py_ssize_t names;       /* the number of local slots: the slots past them are the stack */
} Call;

/* Read record(frame, spec)'s arguments into *call. The spec is a NamedTuple:
 * read as a tuple (PyArg_ParseTuple's "(...)" reads a tuple subclass
 * through __getitem__, a Python call an item). */
static dyndbg_status
read_call(PyObject *const *args, Py_ssize_t nargs, Call *call)
{
    if (nargs != 2 || !PyFrame_Check(args[0]) || !PyTuple_Check(args[1]) ||
        PyTuple_GET_SIZE(args[1]) != RECORD_SPEC_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "record(frame, spec): spec is a 5-tuple");
        return DYNDBG_ERROR;
    }
    PyObject *spec = args[1];       /* borrowed */
    call->frame = args[0];
    call->entry = PyTuple_GET_ITEM(spec, RECORD_SPEC_ENTRY);
    call->instructions = PyTuple_GET_ITEM(spec, RECORD_SPEC_INSTRUCTIONS);
    call->celled = PyTuple_GET_ITEM(spec, RECORD_SPEC_CELLED);
    call->depths = PyTuple_GET_ITEM(spec, RECORD_SPEC_DEPTHS);
    call->names = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, RECORD_SPEC_NAMES));
    if (call->names == -1 && PyErr_Occurred())
        return DYNDBG_ERROR;
    if (!PyDict_Check(call->instructions) || !PyTuple_Check(call->celled)) {
        PyErr_SetString(PyExc_TypeError, "record(frame, spec): a spec field's type is wrong");
        return DYNDBG_ERROR;
    }
    return DYNDBG_OK;
}

/* The instruction at the frame's offset: owned; NULL with no error set
 * where the offset starts no instruction, NULL with an error set */
static PyObject *
instruction_at(const Call *call)
{
    PyObject *offset = PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)call->frame));
    if (offset == NULL)
        return NULL;
    PyObject *instr = PyDict_GetItemWithError(call->instructions, offset);    /* borrowed */
    Py_DECREF(offset);
    return Py_XNewRef(instr);
}

/* The frame's slots, a list (owned), where a cell or free slot holds a cell:
 * its contents are the value (cpython.NULL if empty). NULL with no error set
 * where the frame cannot be read now (StackUnavailable), NULL with an error
 * set. */
static PyObject *
read_slots(Recorder *self, const Call *call)
{
    PyObject *slots = dyndbg_read_at_event(call->frame, call->depths, 1);
    if (slots == NULL) {
        if (PyErr_ExceptionMatches(self->unavailable))
            PyErr_Clear();
        return NULL;
    }
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(call->celled); c++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(call->celled, c));
        if (i == -1 && PyErr_Occurred())
            goto error;
        if (i < 0 || i >= PyList_GET_SIZE(slots))
            continue;
        PyObject *value = PyList_GET_ITEM(slots, i);       /* borrowed */
        if (Py_IS_TYPE(value, &PyCell_Type)) {
            PyObject *contents = PyCell_Get(value);     /* owned */
            if (contents == NULL && PyErr_Occurred())
                goto error;
            PyList_SetItem(slots, i, contents ? contents : Py_NewRef(self->null_object));  /* steals */
        }
    }
    return slots;
error:
    Py_DECREF(slots);
    return NULL;
}

/* The frame's Track, History.tracks[key] (owned), made by
 * History._new_track(frame) the first time; NULL with an error set */
static PyObject *
track_of(Recorder *self, const Call *call, PyObject *key)
{
    PyObject *track = Py_XNewRef(PyDict_GetItemWithError(self->tracks, key));
    if (track == NULL) {
        if (PyErr_Occurred())
            return NULL;
        track = PyObject_CallOneArg(self->new_track, call->frame);
        if (track == NULL)
            return NULL;
    }
    if (!Py_IS_TYPE(track, &DyndbgTrack_Type)) {
        PyErr_SetString(PyExc_TypeError, "history: a track is not a compiled Track");
        Py_DECREF(track);
        return NULL;
    }
    return track;
}

/* ValueKeeper.keep_all of the slots into the track (History._record): the
 * track's kept list (owned), now what is kept of this record's slots; the
 * track's raw slots and opname become this record's. *anew: whether keep()
 * ran. NULL on failure. */
static PyObject *
keep_slots(Recorder *self, Track *t, PyObject *slots, PyObject *instr, PyObject *seq, int *anew)
{
    /* owned, each released at `done` */
    PyObject *previous = NULL, *kept = NULL, *tokens = NULL, *opname = NULL;
    Py_ssize_t *sources = NULL;
    dyndbg_status status = DYNDBG_ERROR;
    if (!(previous = dyndbg_track_list(t->raw, "raw")) ||
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
    if (moved == DYNDBG_ERROR)
        goto done;
    if (moved || PyList_GET_SIZE(kept) != count) {
        if (dyndbg_keep_all(&self->keeping, slots, kept, tokens, sources, seq, anew) < 0)
            goto done;
    }
    Py_XSETREF(t->raw, Py_NewRef(slots));
    Py_SETREF(opname, PyObject_GetAttr(instr, str_opname));
    if (opname == NULL)
        goto done;
    Py_XSETREF(t->opname, Py_NewRef(opname));
    status = DYNDBG_OK;
done:
    PyMem_Free(sources);
    Py_XDECREF(previous);
    Py_XDECREF(tokens);
    Py_XDECREF(opname);
    if (status == DYNDBG_ERROR)
        Py_CLEAR(kept);
    return kept;
}

/* This record's locals, the first `names` kept values (owned): the same kept
 * objects as the previous record's are its tuple, shared. The track's locals
 * and newest become this record's. NULL with an error set. */
static PyObject *
newest_locals(Track *t, PyObject *kept, Py_ssize_t names, PyObject *seq)
{
    PyObject *local_values;
    PyObject *old_locals = Py_XNewRef(t->locals);     /* owned */
    if (old_locals != NULL && PyTuple_Check(old_locals) && PyTuple_GET_SIZE(old_locals) == names &&
        same_prefix(kept, old_locals))
        local_values = old_locals;
    else {
        Py_XDECREF(old_locals);
        local_values = list_part(kept, 0, names);
        if (local_values == NULL)
            return NULL;
    }
    Py_XSETREF(t->locals, Py_NewRef(local_values));
    Py_XSETREF(t->newest, Py_NewRef(seq));
    return local_values;
}

/* A Record of these fields, by RECORD_* index (borrowed): owned, or NULL
 * with an error set. tuple.__new__(Record, fields), as history.py makes it:
 * tuple's own constructor sets up what a tuple of this Python keeps beside
 * its items. */
static PyObject *
new_record(Recorder *self, PyObject *const values[RECORD_FIELDS])
{
    PyObject *fields = PyTuple_New(RECORD_FIELDS);      /* owned */
    if (fields == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < RECORD_FIELDS; i++)
        PyTuple_SET_ITEM(fields, i, Py_NewRef(values[i]));
    PyObject *new_args = PyTuple_Pack(1, fields);     /* owned */
    Py_DECREF(fields);
    if (new_args == NULL)
        return NULL;
    PyObject *record = PyTuple_Type.tp_new((PyTypeObject *)self->record_type, new_args, NULL);
    Py_DECREF(new_args);
    return record;
}

/* The Record of the instruction at the frame's offset (owned): its slots
 * kept into the track (keep_slots), split into its locals and its stack.
 * *anew: whether keep() ran. NULL on failure. */
static PyObject *
make_record(Recorder *self, const Call *call, PyObject *instr, PyObject *slots, PyObject *key,
            Track *t, PyObject *seq, int *anew)
{
    /* owned, each released at `done` */
    PyObject *record = NULL, *local_values = NULL, *stack = NULL, *caller = NULL,
        *globals = NULL;
    PyObject *kept = keep_slots(self, t, slots, instr, seq, anew);     /* owned */
    if (kept == NULL)
        return NULL;
    Py_ssize_t names = call->names;
    if (names > PyList_GET_SIZE(kept))
        names = PyList_GET_SIZE(kept);
    local_values = newest_locals(t, kept, names, seq);
    if (local_values == NULL)
        goto done;
    stack = list_part(kept, names, PY_SSIZE_T_MAX);
    if (stack == NULL || !(caller = Py_XNewRef(t->caller))) {
        if (stack != NULL)
            PyErr_SetString(PyExc_TypeError, "history: a track has no caller");
        goto done;
    }
    globals = PyFrame_GetGlobals((PyFrameObject *)call->frame);
    if (globals == NULL)
        goto done;
    PyObject *const values[RECORD_FIELDS] = {
        [RECORD_SEQ] = seq, [RECORD_FRAME_ID] = key, [RECORD_ENTRY] = call->entry,
        [RECORD_INSTR] = instr, [RECORD_STACK] = stack, [RECORD_SLOTS] = local_values,
        [RECORD_CALLER] = caller, [RECORD_GLOBALS] = globals,
    };
    record = new_record(self, values);
    if (record == NULL)
        goto done;
    /* No record is in a reference cycle (it holds kept values, its code's
     * entry and instruction, the module's globals; nothing holds a record
     * but the history): the garbage collector need not walk the hundreds of
     * thousands a history holds, as it skips tuples of atomic values. */
    dyndbg_untrack(record);
    dyndbg_untrack(stack);
    dyndbg_untrack(local_values);
done:
    Py_DECREF(kept);
    Py_XDECREF(local_values);
    Py_XDECREF(stack);
    Py_XDECREF(caller);
    Py_XDECREF(globals);
    return record;
}

/* History._drop(held - size) where the history holds more records than its
 * size, without a Python call: whether the drops since the last sweep are
 * now past History._sweep_after (the sweep stays History._trim's) */
static dyndbg_truth
drop_past_size(Recorder *self)
{
    Py_ssize_t limit = self->size, held = PyObject_Size(self->records);
    if (held == -1)
        return DYNDBG_ERROR;
    if (held <= limit || limit < 0)
        return DYNDBG_FALSE;
    for (Py_ssize_t k = limit; k < held; k++) {
        PyObject *gone = PyObject_CallNoArgs(self->popleft);     /* owned */
        if (gone == NULL)
            return DYNDBG_ERROR;
        Py_DECREF(gone);
    }
    if (dyndbg_attribute_add(self->history, str_dropped, held - limit) < 0 ||
        dyndbg_attribute_add(self->history, str_dropped_since_sweep, held - limit) < 0)
        return DYNDBG_ERROR;
    return dyndbg_attribute_greater(self->history, str_dropped_since_sweep, str_sweep_after);
}

/* Whether the keeper's copies are past History.memory, History._trim's
 * other bound (keep() may have copied a tensor) */
static dyndbg_truth
past_memory(Recorder *self)
{
    /* each owned */
    PyObject *keeper = PyObject_GetAttr(self->history, str_keeper);
    PyObject *bytes = keeper ? PyObject_GetAttr(keeper, str_bytes) : NULL;
    PyObject *limits = keeper ? PyObject_GetAttr(keeper, str_limits) : NULL;
    PyObject *memory = limits ? PyObject_GetAttr(limits, str_memory_bytes) : NULL;
    dyndbg_truth over =
        bytes && memory ? PyObject_RichCompareBool(bytes, memory, Py_GT) : DYNDBG_ERROR;
    Py_XDECREF(keeper);
    Py_XDECREF(bytes);
    Py_XDECREF(limits);
    Py_XDECREF(memory);
    return over;
}

/* The record appended to the history, and the records past its size
 * dropped: RECORD_RESULT_CHECK_BOUNDS where History._trim must run, else
 * RECORD_RESULT_RECORDED (owned); NULL with an error set */
static PyObject *
append_record(Recorder *self, PyObject *record, int anew)
{
    PyObject *appended = PyObject_CallOneArg(self->append, record);     /* owned */
    if (appended == NULL)
        return NULL;
    Py_DECREF(appended);
    self->next++;
    dyndbg_truth over = drop_past_size(self);
    if (over == DYNDBG_FALSE && anew)
        over = past_memory(self);
    if (over == DYNDBG_ERROR)
        return NULL;
    return PyLong_FromLong(over == DYNDBG_TRUE ? RECORD_RESULT_CHECK_BOUNDS
                                               : RECORD_RESULT_RECORDED);
}

/* The record of the frame's slots, read before `instr` runs: appended, its
 * RecordResult value (owned); NULL on failure */
static PyObject *
record_slots(Recorder *self, const Call *call, PyObject *instr, PyObject *slots)
{
    /* owned, each released at `done` */
    PyObject *result = NULL, *track = NULL, *seq = NULL, *record = NULL;
    int anew = 0;
    PyObject *key = PyLong_FromVoidPtr(call->frame);
    if (key == NULL || !(track = track_of(self, call, key)) ||
        !(seq = PyLong_FromSsize_t(self->next)) ||
        !(record = make_record(self, call, instr, slots, key, (Track *)track, seq, &anew)))
        goto done;
    result = append_record(self, record, anew);
done:
    Py_XDECREF(key);
    Py_XDECREF(track);
    Py_XDECREF(seq);
    Py_XDECREF(record);
    return result;
}

/* record(frame, spec) -> RecordResult value; spec a RecordSpec (entry,
 * instructions by offset, number of local slots, celled slot indices, depths
 * or None). */
PyObject *
dyndbg_recorder_record(Recorder *self, PyObject *const *args, Py_ssize_t nargs)
{
    Call call;
    if (read_call(args, nargs, &call) == DYNDBG_ERROR)
        return NULL;
    PyObject *instr = instruction_at(&call);     /* owned */
    if (instr == NULL)
        return PyErr_Occurred() ? NULL : PyLong_FromLong(RECORD_RESULT_NOT_AN_INSTRUCTION);
    PyObject *result;       /* owned */
    PyObject *slots = read_slots(self, &call);     /* owned */
    if (slots == NULL)
        result = PyErr_Occurred() ? NULL : PyLong_FromLong(RECORD_RESULT_UNREADABLE);
    else {
        result = record_slots(self, &call, instr, slots);
        Py_DECREF(slots);
    }
    Py_DECREF(instr);
    return result;
}
