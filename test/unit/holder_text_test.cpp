/*
 * holder_text_test.cpp
 *	  Unit tests of the printable-ASCII rule for a lease's text
 *	  (core/holder_text.hpp).  Runs without a server.
 */
#include <cstring>

#include <gtest/gtest.h>

#include "core/holder_text.hpp"

namespace snowflake {
namespace {

TEST(HolderText, PrintableAsciiIsTheBytesFromSpaceToTilde)
{
	EXPECT_FALSE(IsPrintableAscii(0x00));
	EXPECT_FALSE(IsPrintableAscii(0x1F));
	EXPECT_TRUE(IsPrintableAscii(' '));
	EXPECT_TRUE(IsPrintableAscii('~'));
	EXPECT_FALSE(IsPrintableAscii(0x7F));
	EXPECT_FALSE(IsPrintableAscii(0x80));
	EXPECT_FALSE(IsPrintableAscii(0xFF));
}

TEST(HolderText, FirstNonPrintableAsciiNamesTheOffset)
{
	const char	ascii[] = "orders-svc@host1:4242 (api)";

	EXPECT_EQ(FirstNonPrintableAscii(ascii, strlen(ascii)), strlen(ascii));
	EXPECT_EQ(FirstNonPrintableAscii("", 0), 0u);
	EXPECT_EQ(FirstNonPrintableAscii("h\xc3\xb4te", 5), 1u);
	EXPECT_EQ(FirstNonPrintableAscii("host\tname", 9), 4u);
	EXPECT_EQ(FirstNonPrintableAscii("host\x7f", 5), 4u);
	/* Only the first "length" bytes count. */
	EXPECT_EQ(FirstNonPrintableAscii("host\xff", 4), 4u);
}

TEST(HolderText, CleanReplacesEachOtherByteByAQuestionMark)
{
	char		text[] = "h\xc3\xb4te\tA\x7f~";

	CleanToPrintableAscii(text);
	EXPECT_STREQ(text, "h??te?A?~");

	char		empty[] = "";

	CleanToPrintableAscii(empty);
	EXPECT_STREQ(empty, "");
}

} // namespace
} // namespace snowflake
