/* Keeping values as recorded_values.py keeps them, in C: which slots a
 * record reuses from the frame's previous one (slot_sources), and what is
 * kept of a new value (keep_value: values kept as they are, a tensor whose
 * latest copy still holds, small lists and tuples of those; everything
 * else, a new tensor copy included, through the Python ValueKeeper.keep).
 * recorded_values.py is the reference; tests/test_cores_unit.py compares
 * the two. Included by _history.c alone. */
#ifndef DYNDBG_KEEPING_H
#define DYNDBG_KEEPING_H

#include <Python.h>
#ifndef Py_T_OBJECT_EX      /* Python.h names them from 3.12 on; before, structmember.h */
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_T_PYSSIZET T_PYSSIZET
#endif

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

static void
untrack(PyObject *object)
{
    if (PyObject_GC_IsTracked(object))
        PyObject_GC_UnTrack(object);
}

/* _Items(items, tokens), set as its __init__ sets it, without running it:
 * a Python frame started here also goes through dynamo's frame callback,
 * which costs more than the rest of the record. */
static PyObject *
new_items_token(const Keeping *self, PyObject *items, PyObject *tokens)
{
    PyTypeObject *type = (PyTypeObject *)self->items_type;
    PyObject *token = type->tp_alloc(type, 0);
    if (token == NULL)
        return NULL;
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL) {
        Py_DECREF(token);
        return NULL;
    }
    field_set(token, self->items_items, items);
    field_set(token, self->items_tokens, tokens);
    field_set(token, self->items_last, zero);
    Py_DECREF(zero);
    return token;
}

static int known_copy(const Keeping *self, PyObject *tensor, PyObject *seq, PyObject **kept,
                      PyObject **token);
static int keep_container(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth,
                          PyObject **kept, PyObject **token, int *anew);

/* ValueKeeper.keep(value, seq, depth) into *kept and *token (new
 * references): the cases that need no new copy in C (a value kept as it is,
 * a tensor whose latest copy still holds, a small list or tuple of such), the
 * others through the Python keep(), which then sets *anew. 0, or -1 on an
 * error. recorded_values.py is the reference. */
static int
keep_value(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth, PyObject **kept,
           PyObject **token, int *anew)
{
    PyObject *kind = (PyObject *)Py_TYPE(value);
    int found = PySet_Contains(self->as_is, kind);
    if (found != 0) {
        if (found < 0)
            return -1;
        *kept = Py_NewRef(value);
        *token = Py_NewRef(Py_None);
        return 0;
    }
    if (PySlice_Check(value)) {     /* of values kept as they are: itself, as keep() */
        PySliceObject *parts = (PySliceObject *)value;
        found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->start));
        if (found == 1)
            found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->stop));
        if (found == 1)
            found = PySet_Contains(self->as_is, (PyObject *)Py_TYPE(parts->step));
        if (found < 0)
            return -1;
        if (found) {
            *kept = Py_NewRef(value);
            *token = Py_NewRef(Py_None);
            return 0;
        }
    }
    if (self->tensor_types != NULL) {
        found = PySet_Contains(self->tensor_types, kind);
        if (found < 0)
            return -1;
        if (found) {
            int known = known_copy(self, value, seq, kept, token);
            if (known != 0)
                return known < 0 ? -1 : 0;
        }
        else if ((PyList_CheckExact(value) || PyTuple_CheckExact(value)) &&
                 depth < self->container_depth && Py_SIZE(value) <= self->container_items)
            return keep_container(self, value, seq, depth, kept, token, anew);
    }
    *anew = 1;
    PyObject *depth_object = PyLong_FromSsize_t(depth);
    if (depth_object == NULL)
        return -1;
    PyObject *pair = PyObject_CallFunctionObjArgs(self->keep, value, seq, depth_object, NULL);
    Py_DECREF(depth_object);
    if (pair == NULL || !PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        if (pair != NULL)
            PyErr_SetString(PyExc_TypeError, "history: keep() gave no pair");
        Py_XDECREF(pair);
        return -1;
    }
    *kept = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
    *token = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    return 0;
}

/* ValueKeeper._tensor's first case: the tensor's latest copy is of this
 * tensor (its weak reference) and of its version now: that copy, its
 * `last` set to seq. 1 when so, 0 when keep() must decide, -1 on an error. */
static int
known_copy(const Keeping *self, PyObject *tensor, PyObject *seq, PyObject **kept, PyObject **token)
{
    PyObject *key = PyLong_FromVoidPtr(tensor);
    if (key == NULL)
        return -1;
    PyObject *known = Py_XNewRef(PyDict_GetItemWithError(self->copies, key));
    Py_DECREF(key);
    if (known == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if ((PyObject *)Py_TYPE(known) != self->copy_type) {
        Py_DECREF(known);
        return 0;
    }
    int holds = -1;
    PyObject *ref = Py_XNewRef(field_get(known, self->copy_ref));
    PyObject *target = ref ? PyObject_CallNoArgs(ref) : NULL;
    if (target != NULL) {
        holds = target == tensor;
        if (holds)     /* _Copy.holds: a version, the tensor's own now */
            holds = token_holds(self, known, tensor, seq);
        if (holds == 1) {
            *kept = Py_XNewRef(field_get(known, self->copy_tensor));
            *token = Py_NewRef(known);
            if (*kept == NULL) {
                Py_CLEAR(*token);
                holds = -1;
            }
        }
    }
    if (holds < 0 && PyErr_ExceptionMatches(PyExc_RuntimeError)) {
        PyErr_Clear();     /* an inference tensor has no _version: keep() copies it */
        holds = 0;
    }
    Py_XDECREF(ref);
    Py_XDECREF(target);
    Py_DECREF(known);
    return holds;
}

/* ValueKeeper._container for a list or tuple within the bounds: a new one
 * of kept items (a tuple of values kept as they are: itself), its token an
 * _Items of the items and their tokens, or VOLATILE if one is. */
static int
keep_container(const Keeping *self, PyObject *value, PyObject *seq, Py_ssize_t depth,
               PyObject **kept, PyObject **token, int *anew)
{
    PyObject *items = PySequence_Tuple(value);
    if (items == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *kept_items = PyList_New(n), *tokens = PyList_New(n);
    int failed = kept_items == NULL || tokens == NULL, any_token = 0, same = 1, stable = 1;
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i), *kept_item, *item_token;
        if (keep_value(self, item, seq, depth + 1, &kept_item, &item_token, anew) < 0) {
            failed = 1;
            break;
        }
        any_token |= item_token != Py_None;
        same &= kept_item == item;
        stable &= item_token != self->volatile_token;
        PyList_SET_ITEM(kept_items, i, kept_item);
        PyList_SET_ITEM(tokens, i, item_token);
    }
    if (!failed) {
        if (PyTuple_CheckExact(value) && !any_token && same) {
            *kept = Py_NewRef(value);           /* immutable all the way down */
            *token = Py_NewRef(Py_None);
        }
        else {
            *kept = PyTuple_CheckExact(value) ? PyList_AsTuple(kept_items)
                                              : Py_NewRef(kept_items);
            *token = *kept == NULL ? NULL
                : stable ? new_items_token(self, items, tokens)
                         : Py_NewRef(self->volatile_token);
            if (*token == NULL) {
                Py_CLEAR(*kept);
                failed = 1;
            }
            else
                untrack(*kept);
        }
    }
    Py_DECREF(items);
    Py_XDECREF(kept_items);
    Py_XDECREF(tokens);
    return failed ? -1 : 0;
}

/* ValueKeeper.keep_all with the sources found: kept[i] and tokens[i] of each
 * slot not kept as it was. *anew: whether keep() ran (the copies' bytes may
 * have grown). */
static int
keep_all(const Keeping *self, PyObject *values, PyObject *kept, PyObject *tokens,
         const Py_ssize_t *sources, PyObject *seq, int *anew)
{
    Py_ssize_t count = PyList_GET_SIZE(values);
    /* A slot reusing another's kept value reads it at its old place: the
     * lists are copied first only where that place changes or is cut off
     * (most records only push or replace values). */
    int copy = 0;
    for (Py_ssize_t i = 0; i < count && !copy; i++) {
        Py_ssize_t j = sources[i];
        copy = j >= 0 && j != i && (j >= count || sources[j] != j);
    }
    PyObject *old_kept = copy ? PyList_GetSlice(kept, 0, PY_SSIZE_T_MAX) : Py_NewRef(kept);
    PyObject *old_tokens = copy ? PyList_GetSlice(tokens, 0, PY_SSIZE_T_MAX) : Py_NewRef(tokens);
    int failed = old_kept == NULL || old_tokens == NULL ||
        (PyList_GET_SIZE(kept) > count && PyList_SetSlice(kept, count, PY_SSIZE_T_MAX, NULL) < 0) ||
        (PyList_GET_SIZE(tokens) > count &&
         PyList_SetSlice(tokens, count, PY_SSIZE_T_MAX, NULL) < 0);
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
            if (keep_value(self, PyList_GET_ITEM(values, i), seq, 0, &kept_value, &token,
                           anew) < 0) {
                failed = 1;
                break;
            }
        }
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

#endif
