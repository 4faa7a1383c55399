/* UCP active messages through the old API (ucp_worker_set_am_handler, ucp_am_send_nb), which
 * UCX keeps for existing applications: a receiver and a sender process on this machine. Prints the same lines traced or not.
 *   ucp_am_old_api recv DIR N   (waits for N messages of 64 bytes with id 7, checks them)
 *   ucp_am_old_api send DIR N
 * Each publishes its worker address in DIR and connects to the other's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

enum { kAmId = 7, kBytes = 64 };
static int g_received, g_bad;

static ucs_status_t on_message(void* arg, void* data, size_t length, ucp_ep_h reply_ep, unsigned flags) {
  (void)arg, (void)reply_ep, (void)flags;
  const unsigned char* p = data;
  if (length != kBytes || p[0] != (unsigned char)g_received) g_bad++;
  g_received++;
  return UCS_OK;
}

static void on_sent(void* request, ucs_status_t status) { (void)request, (void)status; }

static int fail(const char* what, ucs_status_t s) {
  fprintf(stderr, "ucp_am_old_api: %s: %s\n", what, ucs_status_string(s));
  return 1;
}

/* Publishes this worker's address as DIR/NAME (written, then renamed). */
static int publish_address(ucp_worker_h worker, const char* dir, const char* name) {
  ucp_address_t* addr;
  size_t len;
  ucs_status_t s = ucp_worker_get_address(worker, &addr, &len);
  if (s != UCS_OK) return fail("ucp_worker_get_address", s);
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "wb");
  int bad = !f || fwrite(addr, 1, len, f) != len;
  if (f && fclose(f) != 0) bad = 1;
  ucp_worker_release_address(worker, addr);
  if (bad || rename(tmp, path) != 0) {
    perror("ucp_am_old_api: writing the worker address");
    return 1;
  }
  return 0;
}

/* Connects to the worker whose address DIR/NAME holds (waits up to 30 s for it). */
static int connect_to(ucp_worker_h worker, const char* dir, const char* name, ucp_ep_h* ep) {
  static unsigned char addr[8192];
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len = 0;
  for (int i = 0; i < 3000 && !len; ++i) {
    FILE* f = fopen(path, "rb");
    if (f) {
      len = fread(addr, 1, sizeof addr, f);
      fclose(f);
    }
    if (!len) usleep(10000);
  }
  if (!len) {
    fprintf(stderr, "ucp_am_old_api: no worker address in %s\n", path);
    return 1;
  }
  ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = (ucp_address_t*)addr};
  ucs_status_t s = ucp_ep_create(worker, &p, ep);
  return s == UCS_OK ? 0 : fail("ucp_ep_create", s);
}

static void close_ep(ucp_worker_h worker, ucp_ep_h ep) {
  ucs_status_ptr_t r = ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FORCE);
  if (UCS_PTR_IS_PTR(r)) {
    while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker);
    ucp_request_free(r);
  }
}

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send"))) {
    fprintf(stderr, "usage: ucp_am_old_api recv|send DIR N\n");
    return 2;
  }
  int sender = strcmp(argv[1], "send") == 0, n = atoi(argv[3]);
  char tmp[4200];
  ucp_params_t cp = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_AM};
  ucp_context_h ctx;
  ucs_status_t s = ucp_init(&cp, NULL, &ctx);
  if (s != UCS_OK) return fail("ucp_init", s);
  ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
  ucp_worker_h worker;
  if ((s = ucp_worker_create(ctx, &wp, &worker)) != UCS_OK) return fail("ucp_worker_create", s);
  /* Each side connects to the other, as applications that exchange worker addresses do. */
  ucp_ep_h ep;
  if (!sender) {
    if ((s = ucp_worker_set_am_handler(worker, kAmId, on_message, NULL, UCP_AM_FLAG_WHOLE_MSG)) != UCS_OK)
      return fail("ucp_worker_set_am_handler", s);
    if (publish_address(worker, argv[2], "receiver") || connect_to(worker, argv[2], "sender", &ep)) return 1;
    while (g_received < n) ucp_worker_progress(worker);
    /* Stay until the sender's flush has completed (it needs this worker's answers). */
    snprintf(tmp, sizeof tmp, "%s/sender-done", argv[2]);
    for (int i = 0; i < 3000000 && access(tmp, F_OK) != 0; ++i) {
      ucp_worker_progress(worker);
      if (i % 1000 == 0) usleep(1000);
    }
    printf("received %d messages of %d bytes, %d bad\n", g_received, kBytes, g_bad);
  } else {
    if (publish_address(worker, argv[2], "sender") || connect_to(worker, argv[2], "receiver", &ep)) return 1;
    unsigned char msg[kBytes];
    for (int i = 0; i < n; ++i) {
      memset(msg, i, sizeof msg);
      ucs_status_ptr_t r = ucp_am_send_nb(ep, kAmId, msg, sizeof msg, ucp_dt_make_contig(1), on_sent, 0);
      if (UCS_PTR_IS_ERR(r)) return fail("ucp_am_send_nb", UCS_PTR_STATUS(r));
      if (r) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker);
        ucp_request_free(r);
      }
    }
    ucs_status_ptr_t r = ucp_ep_flush_nb(ep, 0, on_sent);
    if (UCS_PTR_IS_PTR(r)) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(worker);
      ucp_request_free(r);
    }
    printf("sent %d messages of %d bytes\n", n, kBytes);
    fflush(stdout);
    snprintf(tmp, sizeof tmp, "%s/sender-done", argv[2]);
    FILE* done = fopen(tmp, "w");
    if (done) fclose(done);
  }
  close_ep(worker, ep);  /* the peer may be gone: without waiting for its answer */
  ucp_worker_destroy(worker);
  ucp_cleanup(ctx);
  return 0;
}
