/* The compiled History's Recorder object (_recorder.c): what it holds (the
 * History's deque, tracks and types, and its own seq and record-size), its
 * set-up from History.__init__'s arguments; and what crosses between it and
 * history.py by position, named: the spec it reads, the Record it builds,
 * the results it returns (tests/test_c_boundary_unit.py pins each to the
 * Python side). Its record() is _record.c. */
#ifndef DYNDBG_RECORDER_H
#define DYNDBG_RECORDER_H

#include <Python.h>

#include "../../cpython/_capi.h"
#include "../../cpython/_frames.h"
#include "_kept_values.h"

/* record()'s results: history.RecordResult's values (CHECK_BOUNDS: past a
 * bound, History._trim must run) */
enum RecordResult {
    RECORD_RESULT_RECORDED = 0,
    RECORD_RESULT_CHECK_BOUNDS = 1,
    RECORD_RESULT_UNREADABLE = 2,
    RECORD_RESULT_NOT_AN_INSTRUCTION = 3,
};

/* The fields of a history.RecordSpec, record()'s spec, read by index */
enum RecordSpecField {
    RECORD_SPEC_ENTRY = 0,
    RECORD_SPEC_INSTRUCTIONS = 1,
    RECORD_SPEC_NAMES = 2,
    RECORD_SPEC_CELLED = 3,
    RECORD_SPEC_DEPTHS = 4,
    RECORD_SPEC_FIELDS = 5,
};

/* The fields of a recorded_values.ContainerBounds, Recorder()'s
 * container_bounds, read by index */
enum ContainerBoundsField {
    CONTAINER_BOUNDS_ITEMS = 0,
    CONTAINER_BOUNDS_DEPTH = 1,
    CONTAINER_BOUNDS_FIELDS = 2,
};

/* The fields of a history.Record, built by index */
enum RecordField {
    RECORD_SEQ = 0,
    RECORD_FRAME_ID = 1,
    RECORD_ENTRY = 2,
    RECORD_INSTR = 3,
    RECORD_STACK = 4,
    RECORD_SLOTS = 5,
    RECORD_CALLER = 6,
    RECORD_GLOBALS = 7,
    RECORD_FIELDS = 8,
};

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
    Keeping keeping;            /* what keeping values needs (_kept_values.h) */
} Recorder;

extern DYNDBG_HIDDEN PyTypeObject DyndbgRecorder_Type;

/* The names _recorder.c reads, and those _record.c reads, interned once (the
 * module's init). */
DYNDBG_HIDDEN dyndbg_status dyndbg_recorder_intern(void);
DYNDBG_HIDDEN dyndbg_status dyndbg_record_intern(void);

/* The slot reader's read_at_event, from cpython/_frames.c's capsule (the
 * module's init sets it). */
extern DYNDBG_HIDDEN dyndbg_read_at_event_fn dyndbg_read_at_event;

/* record(frame, spec) -> RecordResult value (owned), or NULL with an error
 * set: History.record in C (_record.c) */
DYNDBG_HIDDEN PyObject *dyndbg_recorder_record(Recorder *self, PyObject *const *args,
                                               Py_ssize_t nargs);

#endif
