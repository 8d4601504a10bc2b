/* Copies into shared memory that another core will read. */
#include "nc_internal.h"

#include <string.h>

#if defined(__x86_64__)
void nc_copy_stream(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    /* plain stores up to the first 16-byte boundary of the destination, streamed 64-byte
     * blocks after it, plain stores for the tail */
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    memcpy(d + i, s + i, n - i);
    /* streamed stores are weakly ordered: make them globally visible before any store
     * that follows (the caller's release store of the flag that announces the data) */
    _mm_sfence();
}
#else
void nc_copy_stream(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
#endif
