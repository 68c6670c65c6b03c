/* LD_PRELOAD shim for clients without a port option (smbcacls 4.17 always connects to 445 and
 * 139): a connect() to 127.0.0.1:445 goes to 127.0.0.1:$DAXSMBD_SMB_PORT instead, so the test
 * server keeps its free high loopback port. Every other connect() is passed through unchanged.
 * Built by the interop test that needs it (acl_test.sh): cc -shared -fPIC -o X.so this.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int connect(int fd, const struct sockaddr* addr, socklen_t len) {
    static int (*real_connect)(int, const struct sockaddr*, socklen_t);
    if (!real_connect)
        real_connect = (int (*)(int, const struct sockaddr*, socklen_t))dlsym(RTLD_NEXT, "connect");
    const char* port = getenv("DAXSMBD_SMB_PORT");
    if (port && addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, addr, sizeof in);
        if (ntohs(in.sin_port) == 445 && in.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
            in.sin_port = htons((unsigned short)atoi(port));
            return real_connect(fd, (const struct sockaddr*)&in, sizeof in);
        }
    }
    return real_connect(fd, addr, len);
}
