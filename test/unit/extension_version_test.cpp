/*
 * extension_version_test.cpp
 *	  Unit tests of core/extension_version.hpp.
 */
#include <gtest/gtest.h>

#include "core/extension_version.hpp"

namespace snowflake {
namespace {

TEST(ExtensionVersion, OlderVersionsOfTheChain)
{
	for (const char *old : {"1.0", "1.1", "1.2", "1.3", "1.4"})
		EXPECT_TRUE(IsOlderVersion(old, "1.5")) << old;
}

TEST(ExtensionVersion, SameOrNewerIsNotOlder)
{
	EXPECT_FALSE(IsOlderVersion("1.5", "1.5"));
	EXPECT_FALSE(IsOlderVersion("1.6", "1.5"));
	EXPECT_FALSE(IsOlderVersion("2.0", "1.5"));
}

TEST(ExtensionVersion, NumbersNotText)
{
	EXPECT_TRUE(IsOlderVersion("1.9", "1.10"));
	EXPECT_FALSE(IsOlderVersion("1.10", "1.9"));
	EXPECT_TRUE(IsOlderVersion("1.99", "2.0"));
}

TEST(ExtensionVersion, MalformedIsNeverOlder)
{
	for (const char *bad :
		 {"", "1", "1.", ".4", "1.4.1", "1.4beta", "v1.4", "1.-4", "1234567890.0"})
	{
		EXPECT_FALSE(IsOlderVersion(bad, "1.5")) << bad;
		EXPECT_FALSE(IsOlderVersion("1.4", bad)) << bad;
	}
	EXPECT_FALSE(IsOlderVersion(nullptr, "1.5"));
}

} /* namespace */
} /* namespace snowflake */
