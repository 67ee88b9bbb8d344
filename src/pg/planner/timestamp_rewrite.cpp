/*
 * timestamp_rewrite.cpp
 *	  The planner hook's (module.cpp) rewrite of a comparison of an ID's
 *	  timestamp into a range of the ID.
 *
 * PostgreSQL gives a support function no way to see the comparison around
 * a call (snowflake_timestamp(id) >= x is an OpExpr of timestamptz's own
 * operator, and only that operator's function is asked for index
 * conditions), so the rewrite happens here, before standard_planner:
 *
 *	  snowflake_timestamp(id) >= x
 * becomes
 *	  id >= snowflake_timestamp_lower_id(x, true)
 *	  AND snowflake_timestamp_ge(id, x)
 *
 * Only WHERE and JOIN ... ON are rewritten, in every query level; the
 * expression compared with must not be volatile: it is now evaluated more
 * than once.
 */
extern "C"
{
#include "postgres.h"

#include "access/stratnum.h"
#include "access/transam.h"		/* FirstNormalObjectId */
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"	/* contain_volatile_functions */
#include "utils/lsyscache.h"
}

#include "pg/planner/extension_functions.hpp"
#include "pg/planner/timestamp_rewrite.hpp"
#include "pg/settings.hpp"
#include "pg/tree_walkers.hpp"

namespace {

Node *
CopyNode(const Node *node)
{
	return static_cast<Node *>(copyObjectImpl(node));
}

/* The ID inside snowflake_timestamp(id) or (snowflake_decode(id)).ts. */
Node *
TimestampedId(const ExtensionFunctions &fns, Node *node)
{
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *call = castNode(FuncExpr, node);

		if (call->funcid == fns.timestamp && list_length(call->args) == 1)
			return static_cast<Node *>(linitial(call->args));
		return nullptr;
	}
	if (IsA(node, FieldSelect))
	{
		FieldSelect *field = castNode(FieldSelect, node);

		/* ts is the first column of snowflake_decode()'s result. */
		if (field->fieldnum == 1 && IsA(field->arg, FuncExpr))
		{
			FuncExpr   *call = castNode(FuncExpr, field->arg);

			if (call->funcid == fns.decode && list_length(call->args) == 1)
				return static_cast<Node *>(linitial(call->args));
		}
	}
	return nullptr;
}

/* Whether an expression may be copied into the rewrite. */
bool
BlocksCopyWalker(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	/* Each copy would be a separate subplan or aggregate. */
	if (IsA(node, SubLink) || IsA(node, SubPlan) || IsA(node, Aggref) ||
		IsA(node, WindowFunc) || IsA(node, GroupingFunc))
		return true;
	return expression_tree_walker(node, AS_WALKER(BlocksCopyWalker), context);
}

bool
CanCopy(Node *node)
{
	return !BlocksCopyWalker(node, nullptr) && !contain_volatile_functions(node);
}

int
Commuted(int strategy)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			return BTGreaterStrategyNumber;
		case BTLessEqualStrategyNumber:
			return BTGreaterEqualStrategyNumber;
		case BTGreaterEqualStrategyNumber:
			return BTLessEqualStrategyNumber;
		case BTGreaterStrategyNumber:
			return BTLessStrategyNumber;
		default:
			return strategy;
	}
}

/* id <op> function(ts, inclusive): one bound of the range. */
Expr *
IdBound(Oid op, Oid function, Node *id, Node *ts, bool inclusive, int location)
{
	Node *bound = reinterpret_cast<Node *>(
		makeFuncExpr(function, INT8OID,
					 list_make2(CopyNode(ts), makeBoolConst(inclusive, false)), InvalidOid,
					 InvalidOid, COERCE_EXPLICIT_CALL));
	Expr *clause = make_opclause(op, BOOLOID, false, reinterpret_cast<Expr *>(CopyNode(id)),
								 reinterpret_cast<Expr *>(bound), InvalidOid, InvalidOid);

	castNode(OpExpr, clause)->location = location;
	return clause;
}

/*
 * The rewrite of one comparison, or nullptr to leave it alone.
 */
Node *
RewriteComparison(const ExtensionFunctions &fns, OpExpr *op)
{
	Oid			left_type;
	Oid			right_type;

	if (list_length(op->args) != 2)
		return nullptr;
	op_input_types(op->opno, &left_type, &right_type);
	if (left_type != TIMESTAMPTZOID || right_type != TIMESTAMPTZOID)
		return nullptr;

	int			strategy = get_op_opfamily_strategy(op->opno, fns.timestamptz_family);

	if (strategy < BTLessStrategyNumber || strategy > BTGreaterStrategyNumber)
		return nullptr;

	Node	   *id = TimestampedId(fns, static_cast<Node *>(linitial(op->args)));
	Node	   *ts = static_cast<Node *>(lsecond(op->args));

	if (id == nullptr)
	{
		id = TimestampedId(fns, static_cast<Node *>(lsecond(op->args)));
		ts = static_cast<Node *>(linitial(op->args));
		strategy = Commuted(strategy);
	}
	if (id == nullptr || !CanCopy(id) || !CanCopy(ts))
		return nullptr;
	/*
	 * id::timestamptz on a snowflake calls snowflake_timestamp(bigint) with
	 * the snowflake itself; the range and the recheck take it as the bigint
	 * it is, so that every expression in the tree has the type its
	 * operator or function declares.
	 */
	if (exprType(id) != INT8OID)
		id = reinterpret_cast<Node *>(makeRelabelType(reinterpret_cast<Expr *>(CopyNode(id)),
													  INT8OID, -1, InvalidOid,
													  COERCE_IMPLICIT_CAST));

	List	   *clauses = NIL;

	if (strategy != BTLessStrategyNumber && strategy != BTLessEqualStrategyNumber)
		clauses = lappend(clauses,
						  IdBound(fns.int8_ge, fns.lower_id, id, ts,
								  strategy != BTGreaterStrategyNumber, op->location));
	if (strategy != BTGreaterStrategyNumber && strategy != BTGreaterEqualStrategyNumber)
		clauses = lappend(clauses,
						  IdBound(fns.int8_le, fns.upper_id, id, ts,
								  strategy != BTLessStrategyNumber, op->location));
	clauses = lappend(clauses,
					  makeFuncExpr(fns.recheck[strategy], BOOLOID,
								   list_make2(CopyNode(id), CopyNode(ts)), InvalidOid,
								   InvalidOid, COERCE_EXPLICIT_CALL));
	return reinterpret_cast<Node *>(make_andclause(clauses));
}

/*
 * NOT (snowflake_timestamp(id) >= x) is the negated comparison,
 * snowflake_timestamp(id) < x, in three-valued logic too.  Rewriting that
 * one matters for a negative id, which snowflake_timestamp() rejects: a
 * rewritten >= leaves it below its lower bound, so the comparison would be
 * false there and NOT would return the row, where the query unrewritten
 * raises the error.  The rewritten < has no lower bound, so its recheck
 * sees the negative id and raises the same error.
 */
Node *
RewriteNegatedComparison(const ExtensionFunctions &fns, BoolExpr *not_expr)
{
	if (not_expr->boolop != NOT_EXPR || list_length(not_expr->args) != 1 ||
		!IsA(linitial(not_expr->args), OpExpr))
		return nullptr;

	OpExpr	   *op = castNode(OpExpr, linitial(not_expr->args));

	/* Not a comparison of ours: the caller looks inside as usual. */
	if (RewriteComparison(fns, op) == nullptr)
		return nullptr;

	/*
	 * Ours, but its negation is no range (NOT (... = x) is <>): leave it
	 * whole, since a rewritten = under NOT has the problem above.
	 */
	Oid			negator = get_negator(op->opno);

	if (!OidIsValid(negator))
		return reinterpret_cast<Node *>(not_expr);

	Expr	   *negated = make_opclause(negator, BOOLOID, false,
									  static_cast<Expr *>(linitial(op->args)),
									  static_cast<Expr *>(lsecond(op->args)), op->opcollid,
									  op->inputcollid);

	castNode(OpExpr, negated)->location = op->location;

	Node	   *rewritten = RewriteComparison(fns, castNode(OpExpr, negated));

	return rewritten != nullptr ? rewritten : reinterpret_cast<Node *>(not_expr);
}

Node *
RewriteQualMutator(Node *node, void *context)
{
	if (node == nullptr)
		return nullptr;
	/* A sublink's query is rewritten as a query level of its own. */
	if (IsA(node, Query))
		return node;

	const ExtensionFunctions &fns = *static_cast<const ExtensionFunctions *>(context);
	Node	   *rewritten = nullptr;

	if (IsA(node, OpExpr))
		rewritten = RewriteComparison(fns, castNode(OpExpr, node));
	else if (IsA(node, BoolExpr))
		rewritten = RewriteNegatedComparison(fns, castNode(BoolExpr, node));
	if (rewritten != nullptr)
		return rewritten;
	return expression_tree_mutator(node, AS_MUTATOR(RewriteQualMutator), context);
}

Node *
RewriteQual(const ExtensionFunctions &fns, Node *qual)
{
	return RewriteQualMutator(qual, const_cast<ExtensionFunctions *>(&fns));
}

void
RewriteJoinTree(const ExtensionFunctions &fns, Node *node)
{
	if (node == nullptr)
		return;
	if (IsA(node, FromExpr))
	{
		FromExpr   *from = castNode(FromExpr, node);
		from->quals = RewriteQual(fns, from->quals);
		for (int i = 0; i < list_length(from->fromlist); i++)
			RewriteJoinTree(fns, static_cast<Node *>(list_nth(from->fromlist, i)));
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *join = castNode(JoinExpr, node);

		join->quals = RewriteQual(fns, join->quals);
		RewriteJoinTree(fns, join->larg);
		RewriteJoinTree(fns, join->rarg);
	}
}

/* Visits every query level: subqueries in FROM, CTEs and sublinks. */
bool
RewriteQueryWalker(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Query))
	{
		Query	   *query = castNode(Query, node);

		RewriteJoinTree(*static_cast<const ExtensionFunctions *>(context),
						reinterpret_cast<Node *>(query->jointree));
		return query_tree_walker(query, AS_WALKER(RewriteQueryWalker), context, 0);
	}
	return expression_tree_walker(node, AS_WALKER(RewriteQueryWalker), context);
}

/*
 * Whether a query may hold a comparison the rewrite serves: somewhere in it
 * a call with one argument of a function created after initdb, as
 * snowflake_timestamp(id) and snowflake_decode(id) are.  A superset of
 * what TimestampedId() matches, decided without reading a catalog.
 */
bool
MayCallUserFunctionWalker(Node *node, void *context)
{
	if (node == nullptr)
		return false;
	if (IsA(node, Query))
		return query_tree_walker(castNode(Query, node),
								 AS_WALKER(MayCallUserFunctionWalker), context, 0);
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *call = castNode(FuncExpr, node);

		if (call->funcid >= FirstNormalObjectId && list_length(call->args) == 1)
			return true;
	}
	return expression_tree_walker(node, AS_WALKER(MayCallUserFunctionWalker), context);
}

}							/* namespace */

void
RewriteTimestampComparisons(Query *parse)
{
	if (!g_settings.rewrite_timestamp_comparisons)
		return;

	/*
	 * The first plan of a backend would look the extension's functions up
	 * in cold catalog caches, which costs a new connection more than the
	 * rest of its SELECT 1.  A query that cannot be rewritten leaves them
	 * unknown.
	 */
	if (!ExtensionFunctionsKnown() &&
		!MayCallUserFunctionWalker(reinterpret_cast<Node *>(parse), nullptr))
		return;

	const ExtensionFunctions *fns = CurrentExtensionFunctions();

	/* The planner may scribble on its input: rewrite in place. */
	if (fns != nullptr)
		(void) RewriteQueryWalker(reinterpret_cast<Node *>(parse),
								  const_cast<ExtensionFunctions *>(fns));
}
