#include <lcms2.h>

// lcms2's pixel formats are macros built from shifts, which Swift does not import.
static inline cmsUInt32Number thumbd_lcms_rgb8(void) { return TYPE_RGB_8; }
static inline cmsUInt32Number thumbd_lcms_rgba8(void) { return TYPE_RGBA_8; }
static inline cmsUInt32Number thumbd_lcms_gray8(void) { return TYPE_GRAY_8; }
// libjpeg hands over Adobe CMYK inverted (0 = full ink), which lcms2 calls "reversed".
static inline cmsUInt32Number thumbd_lcms_cmyk8_inverted(void) { return TYPE_CMYK_8_REV; }
