/*
 * Test fixture: a stand-in for Windows' bcryptprimitives.dll, which
 * Debian's wine 8.0 lacks. Go's Windows runtime (1.22+) loads it from
 * system32 at start and calls ProcessPrng for random bytes; without it the
 * binary dies before main. ProcessPrng here fills the buffer with
 * advapi32's SystemFunction036 (RtlGenRandom), which wine implements.
 *
 * Built by hack/wine-test.sh with Debian's gcc-mingw-w64-x86-64-posix:
 *   x86_64-w64-mingw32-gcc-posix -shared -O2 -o bcryptprimitives.dll \
 *     bcryptprimitives.c bcryptprimitives.def -ladvapi32
 * Never shipped: only copied into a test wine prefix's system32.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
	(void)inst; (void)reason; (void)reserved;
	return TRUE;
}
