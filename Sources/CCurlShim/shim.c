#include "CCurlShim.h"

CURLcode thumbd_curl_setopt_long(CURL *handle, CURLoption option, long value) {
  return curl_easy_setopt(handle, option, value);
}
CURLcode thumbd_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
  return curl_easy_setopt(handle, option, value);
}
CURLcode thumbd_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
  return curl_easy_setopt(handle, option, value);
}
CURLcode thumbd_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
  return curl_easy_setopt(handle, option, value);
}
CURLcode thumbd_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
  return curl_easy_setopt(handle, option, value);
}
CURLcode thumbd_curl_setopt_write_function(CURL *handle, thumbd_curl_data_callback callback) {
  return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
CURLcode thumbd_curl_setopt_header_function(CURL *handle, thumbd_curl_data_callback callback) {
  return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}
CURLcode thumbd_curl_setopt_prereq_function(CURL *handle, thumbd_curl_prereq_callback callback) {
  return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}
CURLcode thumbd_curl_setopt_opensocket_function(CURL *handle, thumbd_curl_opensocket_callback callback) {
  return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}
CURLcode thumbd_curl_getinfo_long(CURL *handle, CURLINFO info, long *out) {
  return curl_easy_getinfo(handle, info, out);
}
CURLcode thumbd_curl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *out) {
  return curl_easy_getinfo(handle, info, out);
}
CURLcode thumbd_curl_getinfo_string(CURL *handle, CURLINFO info, const char **out) {
  return curl_easy_getinfo(handle, info, out);
}
CURLMcode thumbd_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
  return curl_multi_setopt(multi, option, value);
}
int thumbd_curl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
  int left = 0;
  CURLMsg *message;
  while ((message = curl_multi_info_read(multi, &left)) != NULL) {
    if (message->msg == CURLMSG_DONE) {
      *easy = message->easy_handle;
      *result = message->data.result;
      return 1;
    }
  }
  return 0;
}
