/* What tells whether a value is as a record kept it, in C, as
 * recorded_values.py tells it: the tokens' checks (token_check: a tensor's
 * _Copy of the same version, an _Items of the same unchanged items), and
 * which slots a record reuses from the frame's previous one (slot_sources).
 * Keeping holds what they and _keeping.h need. recorded_values.py is the
 * reference; tests/test_cores_unit.py compares the two. Included by
 * _keeping.h alone. */
#ifndef DYNDBG_TOKENS_H
#define DYNDBG_TOKENS_H

#include <Python.h>

#include "../../cpython/_members.h"

typedef struct {
    PyObject *keep;             /* ValueKeeper.keep(value, seq, depth) -> (kept, token) */
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
     * (keeping_fields): read and set there, as their member descriptors do,
     * without an attribute look-up at each record. */
    Py_ssize_t copy_version, copy_last, copy_ref, copy_tensor;
    Py_ssize_t items_items, items_tokens, items_last;
} Keeping;

static PyObject *str_tensor_version, *str_last, *str_holds;

/* The attribute names read here, interned once (the module's init). */
static int
keeping_intern(void)
{
    PyObject **slots[] = {&str_tensor_version, &str_last, &str_holds};
    const char *texts[] = {"_version", "last", "holds"};
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
        if ((*slots[i] = PyUnicode_InternFromString(texts[i])) == NULL)
            return -1;
    return 0;
}

/* The offset of type.name, a __slots__ field (an object member): 0, or -1
 * with an error set when it is something else. */
static int
slot_offset(PyObject *type, const char *name, Py_ssize_t *offset)
{
    PyObject *descriptor = PyObject_GetAttrString(type, name);
    if (descriptor == NULL)
        return -1;
    int member = Py_IS_TYPE(descriptor, &PyMemberDescr_Type) &&
        ((PyMemberDescrObject *)descriptor)->d_member->type == Py_T_OBJECT_EX;
    if (member)
        *offset = ((PyMemberDescrObject *)descriptor)->d_member->offset;
    else
        PyErr_Format(PyExc_TypeError, "history: %R.%s is not a __slots__ field", type, name);
    Py_DECREF(descriptor);
    return member ? 0 : -1;
}

/* The offsets of the _Copy and _Items fields read here. 0, or -1 with an error set. */
static int
keeping_fields(Keeping *self)
{
    if (slot_offset(self->copy_type, "version", &self->copy_version) < 0 ||
        slot_offset(self->copy_type, "last", &self->copy_last) < 0 ||
        slot_offset(self->copy_type, "ref", &self->copy_ref) < 0 ||
        slot_offset(self->copy_type, "tensor", &self->copy_tensor) < 0)
        return -1;
    if (self->items_type == NULL)
        return 0;
    return slot_offset(self->items_type, "items", &self->items_items) < 0 ||
        slot_offset(self->items_type, "tokens", &self->items_tokens) < 0 ||
        slot_offset(self->items_type, "last", &self->items_last) < 0 ? -1 : 0;
}

/* A token's field at `offset`, borrowed; NULL with AttributeError set when unset. */
static inline PyObject *
field_get(PyObject *token, Py_ssize_t offset)
{
    PyObject *value = *(PyObject **)((char *)token + offset);
    if (value == NULL)
        PyErr_SetString(PyExc_AttributeError, "history: a token's field is unset");
    return value;
}

/* token's field at `offset` = value, as its member descriptor sets it. */
static inline void
field_set(PyObject *token, Py_ssize_t offset, PyObject *value)
{
    Py_XSETREF(*(PyObject **)((char *)token + offset), Py_NewRef(value));
}

static int token_check(const Keeping *self, PyObject *token, PyObject *value);

/* _Items.holds for a list or tuple, inline: the same items, each unchanged
 * (its token None or holding). 1, 0 or -1 on an error. */
static int
items_check(const Keeping *self, PyObject *token, PyObject *container)
{
    PyObject *items = Py_XNewRef(field_get(token, self->items_items));
    PyObject *tokens = items ? Py_XNewRef(field_get(token, self->items_tokens)) : NULL;
    int holds = -1;
    if (tokens == NULL)
        goto done;
    if (!PyTuple_Check(items) || !PyList_Check(tokens)) {
        PyErr_SetString(PyExc_TypeError, "history: an _Items token's fields are of other types");
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    holds = 0;
    if (Py_SIZE(container) != n || PyList_GET_SIZE(tokens) != n)
        goto done;
    PyObject **now = PyList_CheckExact(container) ? ((PyListObject *)container)->ob_item
                                                  : ((PyTupleObject *)container)->ob_item;
    for (Py_ssize_t i = 0; i < n; i++)
        if (now[i] != PyTuple_GET_ITEM(items, i))
            goto done;
    holds = 1;
    for (Py_ssize_t i = 0; i < n && holds == 1; i++) {
        PyObject *item_token = Py_NewRef(PyList_GET_ITEM(tokens, i));
        if (item_token != Py_None)
            holds = token_check(self, item_token, PyTuple_GET_ITEM(items, i));
        Py_DECREF(item_token);
    }
done:
    Py_XDECREF(items);
    Py_XDECREF(tokens);
    return holds;
}

/* 1 when the token says `value` is as it was kept, 0 when not, -1 on an
 * error: recorded_values' token.holds(), without touching the token. */
static int
token_check(const Keeping *self, PyObject *token, PyObject *value)
{
    if (token == self->volatile_token)
        return 0;
    int holds;
    if ((PyObject *)Py_TYPE(token) == self->copy_type) {
        /* _Copy.holds, inline: its version is not None and equals _version now */
        PyObject *kept = Py_XNewRef(field_get(token, self->copy_version));
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
        return holds;
    }
    if (self->items_type != NULL && (PyObject *)Py_TYPE(token) == self->items_type &&
        (PyList_CheckExact(value) || PyTuple_CheckExact(value))) {
        Py_INCREF(value);
        holds = items_check(self, token, value);
        Py_DECREF(value);
        return holds;
    }
    PyObject *result = PyObject_CallMethodOneArg(token, str_holds, value);
    if (result == NULL)
        return -1;
    holds = PyObject_IsTrue(result);
    Py_DECREF(result);
    return holds;
}

/* token_check, and the token's `last` set to seq when it holds. */
static int
token_holds(const Keeping *self, PyObject *token, PyObject *value, PyObject *seq)
{
    int holds = token_check(self, token, value);
    if (holds != 1)
        return holds;
    if ((PyObject *)Py_TYPE(token) == self->copy_type)
        field_set(token, self->copy_last, seq);
    else if (self->items_type != NULL && (PyObject *)Py_TYPE(token) == self->items_type)
        field_set(token, self->items_last, seq);
    else if (PyObject_SetAttr(token, str_last, seq) < 0)
        return -1;
    return holds;
}

/* recorded_values.slot_sources: fills sources[i] with i (kept as it was),
 * another previous slot j, or -1 (keep anew). Returns how many slots are not
 * kept as they were, or -1 on an error. */
static Py_ssize_t
slot_sources(const Keeping *self, PyObject *values, PyObject *previous, PyObject *tokens,
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

#endif
