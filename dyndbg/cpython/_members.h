/* The member types a PyMemberDef names (an object field, a Py_ssize_t):
 * Python.h names them Py_T_* from 3.12 on; 3.11 has them in structmember.h
 * without the prefix. Included by the engine's C files that declare or read
 * members (engine/recording/_track.c, _token_checks.c, _recorder.c). */
#ifndef DYNDBG_MEMBERS_H
#define DYNDBG_MEMBERS_H

#include <Python.h>
#ifndef Py_T_OBJECT_EX
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_T_PYSSIZET T_PYSSIZET
#endif

#endif
