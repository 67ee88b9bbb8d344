/*
 * pg_fence_probe.cpp
 *	  Must be refused: "make corefence" runs its checks of src/pg on this
 *	  file and fails unless the header check finds <string> and the name
 *	  check reports exactly the lines marked "refused".  Never compiled.
 */
#include <string>

using namespace std;	  /* refused */
namespace standard = std; /* refused */

/* A comment that names std::string is no use of it. */
struct Probe
{
	std::string text; /* refused */
	std ::vector<int> ids; /* refused */
	std::unique_ptr<int> owned; /* refused */
	std::function<void()> callback; /* refused */
	std::string_view view;
	std::size_t size;
	~Probe() {} /* refused */
};
