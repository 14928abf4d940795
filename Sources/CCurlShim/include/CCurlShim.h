// Typed, non-variadic wrappers over libcurl's variadic calls, which Swift cannot call directly.
// Every function is prefixed thumbd_curl_ and forwards one argument of one C type.
#ifndef THUMBD_CCURLSHIM_H
#define THUMBD_CCURLSHIM_H

#include <curl/curl.h>

typedef size_t (*thumbd_curl_data_callback)(char *data, size_t size, size_t nmemb, void *userdata);
typedef int (*thumbd_curl_prereq_callback)(void *userdata, char *conn_primary_ip, char *conn_local_ip,
                                           int conn_primary_port, int conn_local_port);

typedef curl_socket_t (*thumbd_curl_opensocket_callback)(void *userdata, curlsocktype purpose,
                                                         struct curl_sockaddr *address);

CURLcode thumbd_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode thumbd_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode thumbd_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode thumbd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode thumbd_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode thumbd_curl_setopt_write_function(CURL *handle, thumbd_curl_data_callback callback);
CURLcode thumbd_curl_setopt_header_function(CURL *handle, thumbd_curl_data_callback callback);
CURLcode thumbd_curl_setopt_prereq_function(CURL *handle, thumbd_curl_prereq_callback callback);
CURLcode thumbd_curl_setopt_opensocket_function(CURL *handle, thumbd_curl_opensocket_callback callback);

CURLcode thumbd_curl_getinfo_long(CURL *handle, CURLINFO info, long *out);
CURLcode thumbd_curl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *out);
CURLcode thumbd_curl_getinfo_string(CURL *handle, CURLINFO info, const char **out);

CURLMcode thumbd_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
/// The next finished transfer of `multi`: 1 with its handle and result, 0 when none is left. (CURLMsg
/// keeps the result in an anonymous union, which Swift does not import.)
int thumbd_curl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result);

/// The values Swift needs from curl's macros, which the importer does not see.
static inline int thumbd_curl_prereq_ok(void) { return CURL_PREREQFUNC_OK; }
static inline int thumbd_curl_prereq_abort(void) { return CURL_PREREQFUNC_ABORT; }
/// A write callback's answer that pauses the transfer: curl keeps the chunk and delivers it again after
/// thumbd_curl_resume.
static inline size_t thumbd_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline CURLcode thumbd_curl_resume(CURL *handle) { return curl_easy_pause(handle, CURLPAUSE_CONT); }

#endif
