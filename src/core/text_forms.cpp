/*
 * text_forms.cpp
 *	  Compact text forms of a snowflake ID (text_forms.hpp).
 */
#include "text_forms.hpp"

namespace snowflake {

namespace {

/* Each alphabet lists the digits 0 to base - 1, in ASCII order. */
constexpr char kBase32HexDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";
constexpr char kCrockfordDigits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr char kBase62Digits[] =
	"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr char kDecimalDigits[] = "0123456789";

/*
 * How a form reads: each byte's digit value, or -1 for a byte that is no
 * character of the form.
 */
struct DigitTable
{
	int8_t		value[256];
};

constexpr char
LowerAscii(char c)
{
	return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

/* A table of "digits"; letters read in either case if "fold_case". */
constexpr DigitTable
MakeDigitTable(const char *digits, int base, bool fold_case)
{
	DigitTable	table{};

	for (int b = 0; b < 256; b++)
		table.value[b] = -1;
	for (int d = 0; d < base; d++)
	{
		table.value[static_cast<unsigned char>(digits[d])] = static_cast<int8_t>(d);
		if (fold_case)
			table.value[static_cast<unsigned char>(LowerAscii(digits[d]))] =
				static_cast<int8_t>(d);
	}
	return table;
}

/* Crockford's: also I and L for 1, O for 0, in either case. */
constexpr DigitTable
MakeCrockfordTable()
{
	DigitTable	table = MakeDigitTable(kCrockfordDigits, 32, true);

	table.value['I'] = table.value['i'] = table.value['L'] = table.value['l'] = 1;
	table.value['O'] = table.value['o'] = 0;
	return table;
}

/* One form: its alphabet, base, width and how it reads. */
struct FormSpec
{
	const char *name;
	const char *digits;
	uint64_t	base;
	size_t		width;			/* exact, or the largest for decimal */
	bool		fixed_width;
	DigitTable	table;
};

static_assert(std::is_trivially_destructible_v<FormSpec>,
			  "FormSpec is a constant table of plain data");

constexpr FormSpec kForms[] = {
	{"base32hex", kBase32HexDigits, 32, 13, true,
	 MakeDigitTable(kBase32HexDigits, 32, true)},
	{"crockford", kCrockfordDigits, 32, 13, true, MakeCrockfordTable()},
	{"base62", kBase62Digits, 62, 11, true, MakeDigitTable(kBase62Digits, 62, false)},
	{"decimal", kDecimalDigits, 10, 19, false, MakeDigitTable(kDecimalDigits, 10, false)},
};

constexpr const FormSpec &
Spec(TextForm form)
{
	return kForms[static_cast<int>(form)];
}

constexpr uint64_t kMaxId = static_cast<uint64_t>(INT64_MAX);

/* Whether "width" digits of "base" hold every ID, and "width" - 1 do not. */
constexpr bool
WidthFits(uint64_t base, size_t width)
{
	uint64_t	ids_below = 1;	/* base^(width - 1), while it stays at or below kMaxId */

	for (size_t i = 1; i < width; i++)
	{
		if (ids_below > kMaxId / base)
			return false;
		ids_below *= base;
	}
	return ids_below <= kMaxId && ids_below > kMaxId / base;
}

static_assert(WidthFits(32, 13) && WidthFits(62, 11) && WidthFits(10, 19),
			  "each width is the fewest digits that write 2^63 - 1");

} // namespace

bool
ParseTextFormName(const char *name, size_t length, TextForm *form)
{
	for (size_t f = 0; f < sizeof(kForms) / sizeof(kForms[0]); f++)
	{
		const char *want = kForms[f].name;
		size_t		i = 0;

		while (i < length && want[i] != '\0' && LowerAscii(name[i]) == want[i])
			i++;
		if (i == length && want[i] == '\0')
		{
			*form = static_cast<TextForm>(f);
			return true;
		}
	}
	return false;
}

const char *
TextFormName(TextForm form)
{
	return Spec(form).name;
}

size_t
TextFormWidth(TextForm form)
{
	return Spec(form).width;
}

size_t
EncodeTextForm(TextForm form, int64_t id, char *out)
{
	const FormSpec &spec = Spec(form);

	if (id < 0)
		return 0;

	uint64_t	rest = static_cast<uint64_t>(id);
	char		reversed[kMaxTextFormLength];
	size_t		n = 0;

	/* Digits from the last; a base form pads to its width with zeros. */
	do
	{
		reversed[n++] = spec.digits[rest % spec.base];
		rest /= spec.base;
	} while (rest != 0);
	if (spec.fixed_width)
		while (n < spec.width)
			reversed[n++] = spec.digits[0];
	for (size_t i = 0; i < n; i++)
		out[i] = reversed[n - 1 - i];
	return n;
}

DecodeOutcome
DecodeTextForm(TextForm form, const char *text, size_t length)
{
	const FormSpec &spec = Spec(form);
	DecodeOutcome outcome{DecodeStatus::kOk, 0, 0, 0};

	if (length == 0)
	{
		outcome.status = DecodeStatus::kEmpty;
		return outcome;
	}
	for (size_t i = 0; i < length; i++)
	{
		unsigned char byte = static_cast<unsigned char>(text[i]);

		if (spec.table.value[byte] < 0)
		{
			outcome.status = DecodeStatus::kBadCharacter;
			outcome.position = i + 1;
			outcome.character = byte;
			return outcome;
		}
	}
	if (length > spec.width)
	{
		outcome.status = DecodeStatus::kTooLong;
		return outcome;
	}
	if (spec.fixed_width && length < spec.width)
	{
		outcome.status = DecodeStatus::kTooShort;
		return outcome;
	}

	uint64_t	value = 0;

	for (size_t i = 0; i < length; i++)
	{
		uint64_t	digit = static_cast<uint64_t>(
			spec.table.value[static_cast<unsigned char>(text[i])]);

		/* value * base + digit <= kMaxId, without overflowing. */
		if (value > (kMaxId - digit) / spec.base)
		{
			outcome.status = DecodeStatus::kOutOfRange;
			return outcome;
		}
		value = value * spec.base + digit;
	}
	outcome.value = static_cast<int64_t>(value);
	return outcome;
}

} // namespace snowflake
