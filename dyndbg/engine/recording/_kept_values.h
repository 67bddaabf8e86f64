/* What a record keeps of a frame's slots, in C, as recorded_values.py
 * keeps it (the reference; tests/test_cores_unit.py compares the two):
 *   _keep_value.c    what is kept of a new value (ValueKeeper.keep)
 *   _keep_all.c      which slots a record reuses from the frame's previous
 *                    one (slot_sources), and the others kept (keep_all)
 *   _token_checks.c  whether a kept value is still as it was kept (the
 *                    tokens' holds()), and where the tokens' fields lie
 * Keeping holds what they need. The return codes are cpython/_capi.h's. */
#ifndef DYNDBG_KEPT_VALUES_H
#define DYNDBG_KEPT_VALUES_H

#include <Python.h>

#include "../../cpython/_capi.h"

/* The fields of a recorded_values.Kept, the pair ValueKeeper.keep returns,
 * read and built by index (tests/test_c_boundary_unit.py pins them to its
 * _fields). */
enum KeptField {
    KEPT_VALUE = 0,
    KEPT_TOKEN = 1,
    KEPT_FIELDS = 2,
};

typedef struct {
    PyObject *keep;             /* ValueKeeper.keep(value, seq, depth) -> Kept */
    PyObject *copy_type;        /* recorded_values._Copy */
    PyObject *volatile_token;   /* recorded_values.VOLATILE */
    PyObject *as_is;            /* recorded_values.AS_IS: kept as they are, no token */
    /* What keep_value needs to answer tensors and containers itself (all
     * NULL: every value not AS_IS goes to keep()). */
    PyObject *copies;           /* the keeper's copies_by_id: id(tensor) -> its latest _Copy */
    PyObject *tensor_types;     /* frozenset(tensor_copy.PLAIN_TENSOR_TYPES) */
    PyObject *items_type;       /* recorded_values._Items */
    Py_ssize_t container_items; /* recorded_values.CONTAINER_ITEMS */
    Py_ssize_t container_depth; /* recorded_values.CONTAINER_DEPTH */
    /* Where the tokens' __slots__ fields lie in a _Copy and an _Items
     * (dyndbg_keeping_fields): read and set there, as their member
     * descriptors do, without an attribute look-up at each record. */
    Py_ssize_t copy_version, copy_last, copy_ref, copy_tensor;
    Py_ssize_t items_items, items_tokens, items_last;
} Keeping;      /* its objects owned by the Recorder that holds it */

/* A token's field at `offset`: borrowed; NULL with AttributeError set when unset. */
static inline PyObject *
dyndbg_field_get(PyObject *token, Py_ssize_t offset)
{
    PyObject *value = *(PyObject **)((char *)token + offset);
    if (value == NULL)
        PyErr_SetString(PyExc_AttributeError, "history: a token's field is unset");
    return value;
}

/* token's field at `offset` = value, as its member descriptor sets it. */
static inline void
dyndbg_field_set(PyObject *token, Py_ssize_t offset, PyObject *value)
{
    Py_XSETREF(*(PyObject **)((char *)token + offset), Py_NewRef(value));
}

/* -- _token_checks.c ---------------------------------------------------------------------- */

/* The attribute names read there, interned once (the module's init). */
DYNDBG_HIDDEN dyndbg_status dyndbg_keeping_intern(void);

/* The offsets of the _Copy and _Items fields read and set (TypeError where
 * one is not a __slots__ field). */
DYNDBG_HIDDEN dyndbg_status dyndbg_keeping_fields(Keeping *self);

/* recorded_values' token.holds(value), and the token's `last` set to seq
 * when it holds. */
DYNDBG_HIDDEN dyndbg_truth dyndbg_token_holds(const Keeping *self, PyObject *token,
                                              PyObject *value, PyObject *seq);

/* -- _keep_value.c ------------------------------------------------------------------------ */

/* ValueKeeper.keep(value, seq, depth) into *kept and *token (owned): the
 * cases that need no new copy in C (a value kept as it is, a tensor whose
 * latest copy still holds, a small list or tuple of such), the others
 * through the Python keep(), which then sets *anew. */
DYNDBG_HIDDEN dyndbg_status dyndbg_keep_value(const Keeping *self, PyObject *value,
                                              PyObject *seq, Py_ssize_t depth, PyObject **kept,
                                              PyObject **token, int *anew);

/* -- _keep_all.c -------------------------------------------------------------------------- */

/* recorded_values.slot_sources: fills sources[i] with i (kept as it was),
 * another previous slot j, or -1 (keep anew). How many slots are not kept
 * as they were, or DYNDBG_ERROR. */
DYNDBG_HIDDEN Py_ssize_t dyndbg_slot_sources(const Keeping *self, PyObject *values,
                                             PyObject *previous, PyObject *tokens, int settled,
                                             PyObject *seq, Py_ssize_t *sources);

/* ValueKeeper.keep_all with the sources found: kept[i] and tokens[i] of each
 * slot not kept as it was. *anew: whether keep() ran (the copies' bytes may
 * have grown). */
DYNDBG_HIDDEN dyndbg_status dyndbg_keep_all(const Keeping *self, PyObject *values,
                                            PyObject *kept, PyObject *tokens,
                                            const Py_ssize_t *sources, PyObject *seq, int *anew);

#endif
