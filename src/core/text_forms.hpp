/*
 * text_forms.hpp
 *	  Compact text forms of a snowflake ID, for URLs and logs: writing a
 *	  non-negative int64 in one, and reading it back.
 *
 * The forms:
 *	  base32hex   RFC 4648 section 7: 0-9A-V, 13 characters
 *	  crockford   Douglas Crockford's base32: 0-9A-Z without I L O U,
 *	              13 characters
 *	  base62      0-9A-Za-z, 11 characters
 *	  decimal     the ID's own text (int8out), 1 to 19 digits
 *
 * The base forms are written at a fixed width, zero-padded, in upper case.
 * Each alphabet is in ASCII order, so under the C collation their text
 * sorts as the IDs do.  Reading is strict, so that each ID has one
 * spelling and a cut-off copy is refused rather than read as another ID:
 *	- a base form must be given at its full width (leading zeros too);
 *	- base32hex and crockford are read in either case; crockford also reads
 *	  I and L as 1 and O as 0, as Crockford specifies, but no hyphen (his
 *	  optional separators), since the form written has none and it sorts
 *	  only without them; base62 is case-sensitive;
 *	- decimal takes 1 to 19 digits, no sign and no space;
 *	- nothing above 2^63 - 1.
 */
#ifndef SNOWFLAKE_CORE_TEXT_FORMS_HPP
#define SNOWFLAKE_CORE_TEXT_FORMS_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace snowflake {

enum class TextForm
{
	kBase32Hex,
	kCrockford,
	kBase62,
	kDecimal,
};

/* The longest text of any form: 19 decimal digits for 2^63 - 1. */
constexpr size_t kMaxTextFormLength = 19;

/* The names of the forms, in the order error hints list them. */
constexpr const char *kTextFormNames = "base32hex, crockford, base62 and decimal";

/*
 * The form named "name" ("length" bytes, ASCII letters in either case, as
 * encode() reads its format names); false if no form has that name.
 */
bool ParseTextFormName(const char *name, size_t length, TextForm *form);

/* The name of "form", as ParseTextFormName() reads it. */
const char *TextFormName(TextForm form);

/* The exact width of a base form; for decimal, its largest (19). */
size_t TextFormWidth(TextForm form);

/*
 * Writes "id" in "form" into out[0..kMaxTextFormLength), without a NUL,
 * and returns the number of characters written; 0, writing nothing, if
 * "id" is negative (no form writes a negative ID).  Allocates nothing.
 */
size_t EncodeTextForm(TextForm form, int64_t id, char *out);

/* What reading a text form found; see DecodeTextForm(). */
enum class DecodeStatus
{
	kOk,
	kEmpty,
	kBadCharacter,			/* position and character say which */
	kTooShort,				/* fewer characters than a base form's width */
	kTooLong,				/* more than the form's width */
	kOutOfRange,			/* above 2^63 - 1 */
};

struct DecodeOutcome
{
	DecodeStatus status;
	int64_t		value;		/* the ID, if status is kOk; else 0 */

	/*
	 * For kBadCharacter: the first byte that is no character of the form,
	 * and its 1-based position.  Every byte before it is ASCII, so the
	 * position is the same counted in bytes or in characters, in every
	 * server encoding.
	 */
	size_t		position;
	unsigned char character;
};

static_assert(std::is_trivially_destructible_v<DecodeOutcome>,
			  "src/pg keeps DecodeOutcome on frames that ereport(ERROR) leaves by longjmp");

/*
 * Reads "length" bytes of "text" as an ID in "form".  The first bad
 * character is reported before the length, and the length before the
 * range: a text that is too long and holds a stray character is reported
 * by its character.
 */
DecodeOutcome DecodeTextForm(TextForm form, const char *text, size_t length);

} // namespace snowflake

#endif
