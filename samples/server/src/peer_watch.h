// Tells whether the client of an HTTP request is still connected while its response is pending.
// cpp-httplib 0.11 reports a lost client only when a write fails; a request still waiting in
// the queue or reading its prompt writes nothing. The connection's socket is found once by its
// address pair (the request's local and remote ports) and then polled for a hang-up.
#pragma once
#include <string>

namespace server {

class PeerWatch {
public:
    PeerWatch(const std::string& remote_addr, int remote_port, int local_port);
    // False once the peer closed or reset the connection. True when the socket cannot be found.
    bool alive() const;

private:
    int fd_ = -1;
};

}  // namespace server
