/* The C half of engine/fast_paths.py, what both compiled tracing
 * mechanisms (_settrace.c, _monitoring.c) share (_fast_paths.c, compiled
 * into each): recording one instruction with the compiled History
 * (engine/recording/_history.c) under the engine lock, evaluating a
 * breakpoint's condition where only a hit is counted when it is false, and
 * handing a failure to the mechanism's _fail. The return codes are
 * cpython/_capi.h's. */
#ifndef DYNDBG_FAST_PATHS_H
#define DYNDBG_FAST_PATHS_H

#include <Python.h>
#include <frameobject.h>

#include "../../cpython/_capi.h"
#include "../../cpython/_attributes.h"

/* The fields of a breakpoints.ConditionCheck, which the condition's check
 * reads by index (tests/test_c_boundary_unit.py pins them to its _fields). */
enum ConditionCheckField {
    CONDITION_CHECK_BREAKPOINT = 0,
    CONDITION_CHECK_LOCATION = 1,
    CONDITION_CHECK_EXPRESSION = 2,
    CONDITION_CHECK_CODE = 3,
    CONDITION_CHECK_FIELDS = 4,
};

/* The fields of a conditions.Outcome, which the check builds by index
 * (pinned likewise). */
enum OutcomeField {
    OUTCOME_FRAME_ID = 0,
    OUTCOME_LASTI = 1,
    OUTCOME_EXPRESSION = 2,
    OUTCOME_ERROR = 3,
    OUTCOME_FIELDS = 4,
};

/* History.record's result: history.RecordResult's values (pinned likewise).
 * A result other than RECORDED goes to History.after_record. */
enum RecordResult { RECORD_RESULT_RECORDED = 0 };

/* The attribute and method names read here, interned once (the module's init). */
DYNDBG_HIDDEN dyndbg_status dyndbg_fast_paths_init(void);

/* lock.acquire() */
DYNDBG_HIDDEN dyndbg_status dyndbg_lock_acquire(PyObject *lock);

/* lock.release(), keeping an error already set (the lock is released after
 * an error too): DYNDBG_ERROR when one was set before or the release failed
 * (the earlier error kept then) */
DYNDBG_HIDDEN dyndbg_status dyndbg_lock_release(PyObject *lock);

/* events[kind] += 1 on the mechanism's Counter (a dict) */
DYNDBG_HIDDEN dyndbg_status dyndbg_count_event(PyObject *events, PyObject *kind);

/* record(frame, spec) under lock; after(result) for a result other than
 * RECORDED. The lock is released either way. */
DYNDBG_HIDDEN dyndbg_status dyndbg_record_instruction(PyObject *record, PyObject *frame,
                                                      PyObject *spec, PyObject *lock,
                                                      PyObject *after);

/* The mechanism's _fail(error) with the error set now: control flow (a
 * Ctrl-C) goes on into the program, as from its Python callbacks (NULL
 * returned, the error set); any other error is the engine's, said once, and
 * it detaches (None returned, owned). */
DYNDBG_HIDDEN PyObject *dyndbg_hand_failure(PyObject *fail);

/* A breakpoints.ConditionCheck at the frame's instruction, evaluated as
 * Conditions.evaluate does (its `running` set meanwhile), under the engine
 * lock. DYNDBG_ANSWERED: false, the hits counted as hit() counts them;
 * DYNDBG_SLOW_PATH: the breakpoint changed since, or the condition was true
 * or raised (its Outcome left for hit()); DYNDBG_ERROR. */
DYNDBG_HIDDEN dyndbg_decision dyndbg_condition_is_false(PyObject *check, PyFrameObject *frame,
                                                        PyObject *conditions, PyObject *lock);

#endif
