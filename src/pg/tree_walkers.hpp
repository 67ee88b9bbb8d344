/*
 * tree_walkers.hpp
 *	  Passing a C++ function to PostgreSQL's tree walkers and mutators.
 *
 * PostgreSQL 16 made the tree walkers macros that cast their callback;
 * before, they take an unprototyped function pointer.  copyObject() uses
 * typeof, which C++ lacks.
 */
#ifndef SNOWFLAKE_PG_TREE_WALKERS_HPP
#define SNOWFLAKE_PG_TREE_WALKERS_HPP

extern "C"
{
#include "postgres.h"

#include "nodes/nodes.h"
}

#if PG_VERSION_NUM >= 160000
#define AS_WALKER(fn) (fn)
#define AS_MUTATOR(fn) (fn)
#else
/* Through void (*)(void), which -Wcast-function-type lets match any type. */
#define AS_WALKER(fn) reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)(void)>(fn))
typedef Node *MutatorResult;
using MutatorWithoutPrototype = MutatorResult (*)();
#define AS_MUTATOR(fn) \
	reinterpret_cast<MutatorWithoutPrototype>(reinterpret_cast<void (*)(void)>(fn))
#endif

#endif							/* SNOWFLAKE_PG_TREE_WALKERS_HPP */
