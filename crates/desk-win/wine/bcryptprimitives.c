/* A stand-in for bcryptprimitives.dll under Wine 8.0, which lacks it: Rust's standard library
 * (1.78 and later) imports ProcessPrng from it on Windows. Only for running desk-win-worker
 * under Wine (scripts/wine-conformance.sh builds it); a real Windows host has the system DLL.
 * ProcessPrng fills the buffer from RtlGenRandom (advapi32's SystemFunction036). */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
