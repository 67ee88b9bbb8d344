/*
 * text_forms_test.cpp
 *	  Unit tests of the compact text forms of an ID (core/text_forms.hpp):
 *	  exact texts of the edge IDs, the alphabets, round trips, the sort
 *	  order of the fixed-width forms, and each way reading can fail.
 *	  Runs without a server.
 */
#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/text_forms.hpp"

namespace snowflake {
namespace {

constexpr TextForm kAllForms[] = {TextForm::kBase32Hex, TextForm::kCrockford,
								  TextForm::kBase62, TextForm::kDecimal};
constexpr TextForm kFixedForms[] = {TextForm::kBase32Hex, TextForm::kCrockford,
									TextForm::kBase62};

std::string
Encode(TextForm form, int64_t id)
{
	char out[kMaxTextFormLength];
	size_t n = EncodeTextForm(form, id, out);

	return std::string(out, n);
}

DecodeOutcome
Decode(TextForm form, const std::string &text)
{
	return DecodeTextForm(form, text.data(), text.size());
}

/* The ID "text" reads as, or -1 if reading fails. */
int64_t
Read(TextForm form, const std::string &text)
{
	DecodeOutcome outcome = Decode(form, text);

	return outcome.status == DecodeStatus::kOk ? outcome.value : -1;
}

constexpr int64_t k2p53 = int64_t{1} << 53;

TEST(TextForms, EdgeIdsHaveTheseExactTexts)
{
	/* The texts in the order of kAllForms: base32hex, crockford, base62, decimal. */
	const struct
	{
		int64_t id;
		const char *text[4];
	} cases[] = {
		{0, {"0000000000000", "0000000000000", "00000000000", "0"}},
		{1, {"0000000000001", "0000000000001", "00000000001", "1"}},
		{k2p53 - 1, {"007VVVVVVVVVV", "007ZZZZZZZZZZ", "00fFgnDxSe7", "9007199254740991"}},
		{k2p53, {"0080000000000", "0080000000000", "00fFgnDxSe8", "9007199254740992"}},
		{k2p53 + 1, {"0080000000001", "0080000000001", "00fFgnDxSe9", "9007199254740993"}},
		{INT64_MAX,
		 {"7VVVVVVVVVVVV", "7ZZZZZZZZZZZZ", "AzL8n0Y58m7", "9223372036854775807"}},
	};

	for (const auto &c : cases)
		for (int f = 0; f < 4; f++)
		{
			EXPECT_EQ(Encode(kAllForms[f], c.id), c.text[f]) << TextFormName(kAllForms[f]);
			EXPECT_EQ(Read(kAllForms[f], c.text[f]), c.id) << c.text[f];
		}
}

/* The digit d is written as the d-th character of the form's alphabet. */
TEST(TextForms, EachDigitIsItsAlphabetsCharacter)
{
	const struct
	{
		TextForm form;
		const char *alphabet;
	} alphabets[] = {
		{TextForm::kBase32Hex, "0123456789ABCDEFGHIJKLMNOPQRSTUV"},
		{TextForm::kCrockford, "0123456789ABCDEFGHJKMNPQRSTVWXYZ"},
		{TextForm::kBase62,
		 "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"},
		{TextForm::kDecimal, "0123456789"},
	};

	for (const auto &a : alphabets)
	{
		int64_t base = static_cast<int64_t>(strlen(a.alphabet));

		for (int64_t d = 0; d < base; d++)
		{
			std::string text = Encode(a.form, d);

			EXPECT_EQ(text.back(), a.alphabet[d]) << TextFormName(a.form) << " digit " << d;
			/* In the next place: (base + d) * base + 1 is written "1d1". */
			std::string shifted = Encode(a.form, (base + d) * base + 1);

			EXPECT_EQ(shifted[shifted.size() - 2], a.alphabet[d]) << TextFormName(a.form);
			EXPECT_EQ(Read(a.form, text), d);
		}
		/* ASCII order is what makes the fixed-width text sort as the IDs. */
		for (int64_t d = 1; d < base; d++)
			EXPECT_LT(a.alphabet[d - 1], a.alphabet[d]);
	}
}

TEST(TextForms, BaseFormsHaveAFixedWidth)
{
	EXPECT_EQ(TextFormWidth(TextForm::kBase32Hex), 13u);
	EXPECT_EQ(TextFormWidth(TextForm::kCrockford), 13u);
	EXPECT_EQ(TextFormWidth(TextForm::kBase62), 11u);
	EXPECT_EQ(TextFormWidth(TextForm::kDecimal), 19u);
	for (TextForm form : kFixedForms)
		for (int64_t id : {int64_t{0}, int64_t{31}, int64_t{62}, k2p53, INT64_MAX})
			EXPECT_EQ(Encode(form, id).size(), TextFormWidth(form));
}

TEST(TextForms, NegativeIdsAreNotWritten)
{
	char out[kMaxTextFormLength];

	memset(out, '#', sizeof(out));
	for (TextForm form : kAllForms)
	{
		EXPECT_EQ(EncodeTextForm(form, -1, out), 0u);
		EXPECT_EQ(EncodeTextForm(form, INT64_MIN, out), 0u);
	}
	EXPECT_EQ(std::string(out, sizeof(out)), std::string(sizeof(out), '#'));
}

TEST(TextForms, RandomIdsRoundTripAndSortAsTheIds)
{
	std::mt19937_64 random(20261127);

	for (int i = 0; i < 20000; i++)
	{
		/* Every magnitude: a random number of random low bits. */
		int bits = static_cast<int>(random() % 64);
		int64_t a = static_cast<int64_t>((random() >> 1) >> (63 - bits));
		int64_t b = static_cast<int64_t>(random() >> 1);

		if (i % 7 == 0)
			b = a == INT64_MAX ? a : a + 1;
		for (TextForm form : kAllForms)
		{
			std::string ta = Encode(form, a);
			std::string tb = Encode(form, b);

			ASSERT_EQ(Read(form, ta), a) << TextFormName(form) << " " << ta;
			ASSERT_EQ(Read(form, tb), b) << TextFormName(form) << " " << tb;
			if (form == TextForm::kDecimal)
				continue;
			/* Byte order (the C collation) is the IDs' order. */
			int by_text = strcmp(ta.c_str(), tb.c_str());

			ASSERT_EQ(by_text < 0, a < b) << ta << " " << tb;
			ASSERT_EQ(by_text == 0, a == b) << ta << " " << tb;
		}
	}
}

TEST(TextForms, Base32FormsReadEitherCase)
{
	EXPECT_EQ(Read(TextForm::kBase32Hex, "007vvvvvvvvvv"), k2p53 - 1);
	EXPECT_EQ(Read(TextForm::kBase32Hex, "7vVvVvVvVvVvV"), INT64_MAX);
	EXPECT_EQ(Read(TextForm::kCrockford, "007zzzzzzzzzz"), k2p53 - 1);
	EXPECT_EQ(Read(TextForm::kCrockford, "000000000abcd"),
			  Read(TextForm::kCrockford, "000000000ABCD"));
}

TEST(TextForms, Base62IsCaseSensitive)
{
	EXPECT_EQ(Read(TextForm::kBase62, "0000000000a"), 36);
	EXPECT_EQ(Read(TextForm::kBase62, "0000000000A"), 10);
}

TEST(TextForms, CrockfordReadsILAsOneAndOAsZero)
{
	for (const char *one :
		 {"000000000000I", "000000000000i", "000000000000L", "000000000000l"})
		EXPECT_EQ(Read(TextForm::kCrockford, one), 1) << one;
	EXPECT_EQ(Read(TextForm::kCrockford, "OOOOOOOOOOOOo"), 0);
	EXPECT_EQ(Read(TextForm::kCrockford, "007ZZZZZZZZZZ"),
			  Read(TextForm::kCrockford, "oo7zzzzzzzzzz"));
	/* Only crockford: base32hex's I and L are 18 and 21, O is 24. */
	EXPECT_EQ(Read(TextForm::kBase32Hex, "000000000000I"), 18);
	EXPECT_EQ(Read(TextForm::kBase32Hex, "000000000000L"), 21);
	EXPECT_EQ(Read(TextForm::kBase32Hex, "000000000000O"), 24);
}

TEST(TextForms, EmptyInputIsItsOwnOutcome)
{
	for (TextForm form : kAllForms)
	{
		DecodeOutcome outcome = DecodeTextForm(form, "", 0);

		EXPECT_EQ(outcome.status, DecodeStatus::kEmpty);
		EXPECT_EQ(outcome.value, 0);
	}
}

TEST(TextForms, TheFirstBadCharacterIsNamedWithItsPosition)
{
	struct Case
	{
		TextForm form;
		std::string text;
		size_t position;
		unsigned char character;
	};
	const Case cases[] = {
		/* W follows base32hex's last digit, V; U is no crockford digit. */
		{TextForm::kBase32Hex, "0000W00000000", 5, 'W'},
		{TextForm::kCrockford, "0000U00000000", 5, 'U'},
		{TextForm::kCrockford, "0000u00000000", 5, 'u'},
		/* Crockford's optional hyphens are refused (one spelling per ID). */
		{TextForm::kCrockford, "000000-0000000", 7, '-'},
		{TextForm::kBase62, "00000-00000", 6, '-'},
		{TextForm::kBase62, " 0000000000", 1, ' '},
		{TextForm::kBase62, "0000000000 ", 11, ' '},
		/* The first of two. */
		{TextForm::kBase32Hex, "0Z0Y000000000", 2, 'Z'},
		/* Before the length: too long, but the character is named. */
		{TextForm::kBase32Hex, "00000000000000000000!", 21, '!'},
		{TextForm::kBase32Hex, "=", 1, '='},
		{TextForm::kDecimal, "-1", 1, '-'},
		{TextForm::kDecimal, "+1", 1, '+'},
		{TextForm::kDecimal, "12a", 3, 'a'},
		{TextForm::kDecimal, "1e3", 2, 'e'},
		/* Non-ASCII: its first byte, at its position in characters. */
		{TextForm::kBase62, "00\xc3\xa9", 3, 0xc3},
		{TextForm::kCrockford, std::string("00\0", 3), 3, 0},
		{TextForm::kBase32Hex, "\x7f", 1, 0x7f},
	};

	for (const Case &c : cases)
	{
		DecodeOutcome outcome = Decode(c.form, c.text);

		EXPECT_EQ(outcome.status, DecodeStatus::kBadCharacter) << c.text;
		EXPECT_EQ(outcome.position, c.position) << c.text;
		EXPECT_EQ(outcome.character, c.character) << c.text;
		EXPECT_EQ(outcome.value, 0);
	}
}

TEST(TextForms, BaseFormsMustBeGivenAtFullWidth)
{
	for (TextForm form : kFixedForms)
	{
		std::string full = Encode(form, 12345);

		EXPECT_EQ(Decode(form, full.substr(1)).status, DecodeStatus::kTooShort);
		EXPECT_EQ(Decode(form, full.substr(0, full.size() - 1)).status,
				  DecodeStatus::kTooShort);
		EXPECT_EQ(Decode(form, "1").status, DecodeStatus::kTooShort);
		EXPECT_EQ(Decode(form, "0" + full).status, DecodeStatus::kTooLong);
		EXPECT_EQ(Decode(form, full + "0").status, DecodeStatus::kTooLong);
		EXPECT_EQ(Decode(form, std::string(100000, '0')).status, DecodeStatus::kTooLong);
	}
}

TEST(TextForms, DecimalTakesOneToNineteenDigits)
{
	EXPECT_EQ(Read(TextForm::kDecimal, "7"), 7);
	EXPECT_EQ(Read(TextForm::kDecimal, "0000000000000000007"), 7);
	EXPECT_EQ(Decode(TextForm::kDecimal, "00000000000000000007").status,
			  DecodeStatus::kTooLong);
}

TEST(TextForms, NothingAboveTheLargestBigintIsRead)
{
	const struct
	{
		TextForm form;
		const char *text;
	} above[] = {
		{TextForm::kBase32Hex, "8000000000000"}, /* 2^63 */
		{TextForm::kBase32Hex, "VVVVVVVVVVVVV"}, /* 2^65 - 1 */
		{TextForm::kCrockford, "8000000000000"},
		{TextForm::kCrockford, "zzzzzzzzzzzzz"},
		{TextForm::kBase62, "AzL8n0Y58m8"}, /* 2^63 */
		{TextForm::kBase62, "B0000000000"},
		{TextForm::kBase62, "zzzzzzzzzzz"}, /* above 2^64 too */
		{TextForm::kDecimal, "9223372036854775808"},
		{TextForm::kDecimal, "9999999999999999999"},
	};

	for (const auto &a : above)
	{
		DecodeOutcome outcome = Decode(a.form, a.text);

		EXPECT_EQ(outcome.status, DecodeStatus::kOutOfRange) << a.text;
		EXPECT_EQ(outcome.value, 0);
	}
}

TEST(TextForms, FormNamesReadInEitherCaseAndExactly)
{
	TextForm form = TextForm::kDecimal;

	for (TextForm f : kAllForms)
	{
		const char *name = TextFormName(f);

		ASSERT_TRUE(ParseTextFormName(name, strlen(name), &form)) << name;
		EXPECT_EQ(form, f);
	}
	ASSERT_TRUE(ParseTextFormName("Base32HEX", 9, &form));
	EXPECT_EQ(form, TextForm::kBase32Hex);
	ASSERT_TRUE(ParseTextFormName("CROCKFORD", 9, &form));
	EXPECT_EQ(form, TextForm::kCrockford);
	/* The length counts, not a NUL. */
	ASSERT_TRUE(ParseTextFormName("base62xyz", 6, &form));
	EXPECT_EQ(form, TextForm::kBase62);
	for (const char *bad : {"", "base32", "base6", "base622", " base62", "base62 ", "hex",
							"base64", "base32hexx", "crockford32"})
		EXPECT_FALSE(ParseTextFormName(bad, strlen(bad), &form)) << bad;
	EXPECT_FALSE(ParseTextFormName("base62\0", 7, &form));
}

} // namespace
} // namespace snowflake
