/*
 * text_forms.cpp
 *	  snowflake_to_text() and snowflake_from_text(): the arguments, and the
 *	  errors for what the core (core/text_forms.hpp) found (README.md).
 */
extern "C"
{
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"				/* VARDATA_ANY, before 16 in postgres.h */
#endif
}

#include "core/text_forms.hpp"

extern "C"
{
PG_FUNCTION_INFO_V1(snowflake_to_text);
PG_FUNCTION_INFO_V1(snowflake_from_text);
}

/* What a form's IDs look like, for the DETAIL of a refused input. */
static const char *
FormDescription(snowflake::TextForm form)
{
	switch (form)
	{
		case snowflake::TextForm::kBase32Hex:
			return "A base32hex snowflake ID is 13 characters from 0-9 and A-V, in either case.";
		case snowflake::TextForm::kCrockford:
			return "A crockford snowflake ID is 13 characters from 0-9 and A-Z but U, in "
				   "either case, with I and L read as 1 and O as 0.";
		case snowflake::TextForm::kBase62:
			return "A base62 snowflake ID is 11 characters from 0-9, A-Z and a-z.";
		case snowflake::TextForm::kDecimal:
			return "A decimal snowflake ID is 1 to 19 digits.";
	}
	pg_unreachable();
}

/* The form "format" names; ERROR (22023) if it names none. */
static snowflake::TextForm
FormatArgument(const text *format)
{
	snowflake::TextForm form = snowflake::TextForm::kDecimal;

	if (!snowflake::ParseTextFormName(VARDATA_ANY(format), VARSIZE_ANY_EXHDR(format),
									  &form))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized snowflake ID text format: \"%s\"",
						text_to_cstring(format)),
				 errhint("The formats are %s.", snowflake::kTextFormNames)));
	return form;
}

/*
 * The character of "input" at byte "position" (1-based), NUL-terminated in
 * "out": the whole character, not its first byte.  The core reports the
 * first byte that is no character of the form, and every byte before it
 * is ASCII, so a character starts there.
 */
static void
CharacterAt(const text *input, size_t position, char (&out)[MAX_MULTIBYTE_CHAR_LEN + 1])
{
	const char *at = VARDATA_ANY(input) + position - 1;
	size_t		rest = VARSIZE_ANY_EXHDR(input) - (position - 1);
	size_t		length = static_cast<size_t>(pg_mblen(at));

	length = Min(length, Min(rest, static_cast<size_t>(MAX_MULTIBYTE_CHAR_LEN)));
	memcpy(out, at, length);
	out[length] = '\0';
}

/*
 * Raises the error for "input", which the core refused in "form" as
 * "outcome" says.
 */
[[noreturn]] static void
ReportRefusedInput(snowflake::TextForm form, const text *input,
				   const snowflake::DecodeOutcome &outcome)
{
	const char *name = snowflake::TextFormName(form);
	size_t		length = VARSIZE_ANY_EXHDR(input);
	char		character[MAX_MULTIBYTE_CHAR_LEN + 1];
	bool		too_short = outcome.status == snowflake::DecodeStatus::kTooShort;

	switch (outcome.status)
	{
		case snowflake::DecodeStatus::kEmpty:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("an empty string is not a %s snowflake ID", name),
					 errdetail("%s", FormDescription(form))));
			break;
		case snowflake::DecodeStatus::kBadCharacter:
			CharacterAt(input, outcome.position, character);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid character \"%s\" at position %zu in %s snowflake ID "
							"\"%s\"",
							character, outcome.position, name, text_to_cstring(input)),
					 errdetail("%s", FormDescription(form))));
			break;
		case snowflake::DecodeStatus::kTooShort:
		case snowflake::DecodeStatus::kTooLong:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("%s snowflake ID \"%s\" is too %s", name,
							text_to_cstring(input), too_short ? "short" : "long"),
					 errdetail_plural("It has %zu character. %s",
									  "It has %zu characters. %s", length, length,
									  FormDescription(form))));
			break;
		case snowflake::DecodeStatus::kOutOfRange:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("%s snowflake ID \"%s\" is out of range", name,
							text_to_cstring(input)),
					 errdetail("It is above 9223372036854775807, the largest snowflake "
							   "ID.")));
			break;
		case snowflake::DecodeStatus::kOk:
			break;
	}
	elog(ERROR, "snowflake ID text form refused without a reason");
}

/* snowflake_to_text(id bigint, format text) RETURNS text */
extern "C" Datum
snowflake_to_text(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	snowflake::TextForm form = FormatArgument(PG_GETARG_TEXT_PP(1));
	char		out[snowflake::kMaxTextFormLength];
	size_t		length;

	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("snowflake ID %lld is out of range", static_cast<long long>(id)),
				 errdetail("Snowflake IDs are never negative.")));
	length = snowflake::EncodeTextForm(form, id, out);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, static_cast<int>(length)));
}

/* snowflake_from_text(input text, format text) RETURNS snowflake */
extern "C" Datum
snowflake_from_text(PG_FUNCTION_ARGS)
{
	text	   *input = PG_GETARG_TEXT_PP(0);
	snowflake::TextForm form = FormatArgument(PG_GETARG_TEXT_PP(1));
	snowflake::DecodeOutcome outcome = snowflake::DecodeTextForm(form, VARDATA_ANY(input),
																 VARSIZE_ANY_EXHDR(input));

	if (outcome.status != snowflake::DecodeStatus::kOk)
		ReportRefusedInput(form, input, outcome);
	PG_RETURN_INT64(outcome.value);
}
