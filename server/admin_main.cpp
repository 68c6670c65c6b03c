// daxsmbd-admin: manage the local user database named by the configuration's "user database".
//
//   daxsmbd-admin [-s FILE] user add NAME [--uid N] [--gid N] [--no-password]
//   daxsmbd-admin [-s FILE] user passwd NAME
//   daxsmbd-admin [-s FILE] user del NAME
//   daxsmbd-admin [-s FILE] user list
//   daxsmbd-admin [-s FILE] status
//   daxsmbd-admin [-s FILE] close-session ID
//   daxsmbd-admin [-s FILE] debug-connection ID on|off
//   daxsmbd-admin [-s FILE] reload
//   daxsmbd-admin [-s FILE] cluster status
//   daxsmbd-admin [-s FILE] cluster move SHARE NODE
//
// status, close-session, debug-connection and reload ask the running daemon through its "control
// socket" (root only). The password is read from standard input (one line) when it is not a
// terminal, so scripts can pipe it in; on a terminal it is asked for twice with echo off. Exit
// codes: 0 done, 1 error (one line on stderr), 2 usage.
#include <pwd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/userdb.h"
#include "server/config.h"
#include "server/control/control_socket.h"

namespace {

constexpr const char* kDefaultConfig = "/etc/daxsmbd/daxsmbd.conf";

constexpr const char* kUsage =
    "usage: daxsmbd-admin [-s CONFIG] user add NAME [--uid N] [--gid N] [--no-password]\n"
    "       daxsmbd-admin [-s CONFIG] user passwd NAME\n"
    "       daxsmbd-admin [-s CONFIG] user del NAME\n"
    "       daxsmbd-admin [-s CONFIG] user list\n"
    "       daxsmbd-admin [-s CONFIG] status\n"
    "       daxsmbd-admin [-s CONFIG] close-session ID\n"
    "       daxsmbd-admin [-s CONFIG] debug-connection ID on|off\n"
    "       daxsmbd-admin [-s CONFIG] reload\n"
    "       daxsmbd-admin [-s CONFIG] cluster status\n"
    "       daxsmbd-admin [-s CONFIG] cluster move SHARE NODE\n"
    "CONFIG defaults to /etc/daxsmbd/daxsmbd.conf; the user database is its 'user database'.\n"
    "The password is read from stdin (one line) when stdin is not a terminal.\n"
    "--uid/--gid: the Unix ids the user acts as on disk (default: those of the Unix account of\n"
    "the same name; without such an account --uid is required). uid 0 only for names listed in\n"
    "'admin users'.\n"
    "--no-password: a user without NT hash, for Kerberos logons only (NTLM is refused).\n";

int usage(const std::string& why = {}) {
    if (!why.empty()) std::cerr << "daxsmbd-admin: " << why << "\n";
    std::cerr << kUsage;
    return 2;
}

int fail(const std::string& msg) {
    std::cerr << "daxsmbd-admin: " << msg << "\n";
    return 1;
}

std::optional<uint32_t> parse_id(std::string_view s) {
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

// Windows refuses these characters in account names; a name with them could never log on, and
// ':' or control characters would also be awkward in the database file.
bool valid_user_name(std::string_view name, std::string* why) {
    if (name.empty() || name.size() > 64) {
        *why = "user name must be 1 to 64 characters";
        return false;
    }
    for (char c : name) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f ||
            std::strchr("\"/\\[]:;|=,+*?<>@", c) != nullptr) {
            *why = "user name '" + std::string(name) + "' contains a character not allowed";
            return false;
        }
    }
    if (name.find_first_not_of(" .") == std::string_view::npos) {
        *why = "user name must not consist of dots and spaces only";
        return false;
    }
    return true;
}

// One line from `in`, without its line ending. False at end of input with nothing read.
bool read_line(std::FILE* in, std::string* out) {
    out->clear();
    int c;
    bool any = false;
    while ((c = std::fgetc(in)) != EOF) {
        any = true;
        if (c == '\n') break;
        out->push_back(char(c));
    }
    if (!out->empty() && out->back() == '\r') out->pop_back();
    return any;
}

// Reads a line from the terminal with echo off; restores the terminal state afterwards.
bool prompt_hidden(std::FILE* tty, const std::string& prompt, std::string* out) {
    std::fputs(prompt.c_str(), stderr);
    std::fflush(stderr);
    const int fd = fileno(tty);
    termios old{};
    const bool have_tty = tcgetattr(fd, &old) == 0;
    if (have_tty) {
        termios quiet = old;
        quiet.c_lflag &= ~tcflag_t(ECHO);
        quiet.c_lflag |= ECHONL;  // the Enter key still moves to the next line
        tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    const bool ok = read_line(tty, out);
    if (have_tty) tcsetattr(fd, TCSAFLUSH, &old);
    return ok;
}

// The new password: from stdin when it is not a terminal, else asked twice on the terminal.
std::optional<std::string> get_password(const std::string& user, std::string* error) {
    std::string pw;
    if (!isatty(STDIN_FILENO)) {
        if (!read_line(stdin, &pw)) {
            *error = "no password on standard input";
            return std::nullopt;
        }
    } else {
        std::string again;
        if (!prompt_hidden(stdin, "New password for " + user + ": ", &pw) ||
            !prompt_hidden(stdin, "Retype new password: ", &again)) {
            *error = "no password entered";
            return std::nullopt;
        }
        if (pw != again) {
            *error = "the passwords do not match";
            return std::nullopt;
        }
    }
    if (pw.empty()) {
        *error = "the password must not be empty";
        return std::nullopt;
    }
    return pw;
}

// Creates the directory that holds the database (one level, mode 0700) when it is missing, so a
// fresh installation needs no extra step.
bool ensure_parent_dir(const std::string& path, std::string* error) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) return true;
    const std::string dir = path.substr(0, slash);
    struct stat st {};
    if (stat(dir.c_str(), &st) == 0) return true;
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        *error = "cannot create " + dir + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

struct Options {
    std::string config_path = kDefaultConfig;
    std::optional<uint32_t> uid, gid;
    bool no_password = false;
    std::vector<std::string> words;  // the command: "user", the action and its user name
};

// Fills `opts` from the command line. Returns the exit status when the program ends here (help,
// or a usage error).
std::optional<int> parse_command_line(int argc, char** argv, Options* opts) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= argc) return std::nullopt;
            return std::string(argv[++i]);
        };
        if (a == "-h" || a == "--help") {
            std::cout << kUsage;
            return 0;
        } else if (a == "-s" || a == "--config") {
            auto v = value();
            if (!v) return usage(std::string(a) + " needs a file name");
            opts->config_path = *v;
        } else if (a.starts_with("--config=")) {
            opts->config_path = std::string(a.substr(9));
        } else if (a == "--uid" || a == "--gid") {
            auto v = value();
            auto id = v ? parse_id(*v) : std::nullopt;
            if (!id) return usage(std::string(a) + " needs a number");
            (a == "--uid" ? opts->uid : opts->gid) = *id;
        } else if (a == "--no-password") {
            opts->no_password = true;
        } else if (a.size() > 1 && a[0] == '-') {
            return usage("unknown option " + std::string(a));
        } else {
            opts->words.emplace_back(a);
        }
    }
    return std::nullopt;
}

// Checked before the configuration is read, so a mistyped command fails the same way whether or
// not the configuration is valid. Returns the exit status of a usage error.
std::optional<int> check_command(const Options& opts) {
    const std::vector<std::string>& words = opts.words;
    if (words.empty() || words[0] != "user") return usage();
    if (words.size() < 2) return usage("missing action");
    const std::string& action = words[1];
    const bool needs_name = action == "add" || action == "del" || action == "passwd";
    if (!needs_name && action != "list") return usage("unknown action '" + action + "'");
    if (needs_name && words.size() != 3) return usage(action + " needs exactly one user name");
    if (!needs_name && words.size() != 2) return usage("list takes no arguments");
    if ((opts.uid || opts.gid) && action != "add") return usage("--uid/--gid only go with add");
    if (opts.no_password && action != "add") return usage("--no-password only goes with add");
    return std::nullopt;
}

int list_users(const daxsmbd::auth::UserDatabase& db) {
    for (const std::string& n : db.names()) {
        const daxsmbd::auth::UserRecord* r = db.find(n);
        std::cout << n;
        if (r != nullptr) std::cout << "\tuid=" << r->uid << "\tgid=" << r->gid;
        if (r != nullptr && !r->nt_hash) std::cout << "\tno-password";
        std::cout << "\n";
    }
    return 0;
}

int delete_user(daxsmbd::auth::UserDatabase& db, const std::string& name,
                const std::string& db_path) {
    if (db.find(name) == nullptr) return fail("no user '" + name + "' in " + db_path);
    db.remove(name);
    std::string error;
    if (!db.save(&error)) return fail(error);
    return 0;
}

// Every entry is a Unix identity the server acts as on disk (README "Identity"): the account of
// the same name, or the ids given; never uid 0 by default.
bool new_user_ids(const std::string& name, const Options& opts,
                  const daxsmbd::server::Config& config, daxsmbd::auth::UserRecord* rec,
                  std::string* error) {
    const passwd* pw = getpwnam(name.c_str());
    if (pw == nullptr && !opts.uid) {
        *error = "there is no Unix account '" + name +
                 "': create one (useradd --no-create-home --shell /usr/sbin/nologin " + name +
                 ") or give the ids the user acts as with --uid N --gid N";
        return false;
    }
    if (pw != nullptr) {
        rec->uid = pw->pw_uid;
        rec->gid = pw->pw_gid;
    }
    if (opts.uid) {
        rec->uid = *opts.uid;
        if (!opts.gid) {
            // The primary group of the account with that uid, if there is one.
            const passwd* by_uid = getpwuid(*opts.uid);
            if (by_uid == nullptr) {
                *error = "uid " + std::to_string(*opts.uid) +
                         " has no Unix account to take the group from: give --gid too";
                return false;
            }
            rec->gid = by_uid->pw_gid;
        }
    }
    if (opts.gid) rec->gid = *opts.gid;
    if (rec->uid == 0 && !config.global.is_admin_user(name)) {
        *error = "'" + name + "' would act as root (uid 0) on disk; list it in 'admin " +
                 "users' of " + opts.config_path + " to allow that";
        return false;
    }
    return true;
}

// "add" and "passwd": the record with its new NT hash (or none, with --no-password), saved.
int store_user(daxsmbd::auth::UserDatabase& db, const std::string& db_path,
               daxsmbd::auth::UserRecord rec, bool no_password) {
    std::string error;
    if (no_password) {
        // Kerberos-only: the KDC checks the password; without an NT hash NTLM cannot succeed.
        rec.nt_hash.reset();
    } else {
        auto password = get_password(rec.name, &error);
        if (!password) return fail(error);
        rec.nt_hash = daxsmbd::auth::nt_hash_of_password(*password);
        std::fill(password->begin(), password->end(), '\0');
    }
    db.set(std::move(rec));
    if (!ensure_parent_dir(db_path, &error)) return fail(error);
    if (!db.save(&error)) return fail(error);
    return 0;
}

bool is_daemon_command(const std::string& word) {
    return word == "status" || word == "close-session" || word == "debug-connection" ||
           word == "reload" || word == "cluster";
}

// The "control socket" of a configuration that does not parse (the file a reload is about to
// refuse): the last such line of [global], read leniently; nullopt when it sets none.
std::optional<std::string> scan_control_socket(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::optional<std::string> found;
    bool global = false;
    while (std::getline(in, line)) {
        auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        if (line[first] == '[') {
            global = line.find("global", first) != std::string::npos;
            continue;
        }
        auto eq = line.find('=');
        if (!global || eq == std::string::npos) continue;
        std::string key;
        for (char c : line.substr(first, eq - first))
            if (c != ' ' && c != '\t') key += char(std::tolower(uint8_t(c)));
        if (key != "controlsocket") continue;
        auto v = line.substr(eq + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        v.erase(v.find_last_not_of(" \t\r") + 1);
        found = v;
    }
    return found;
}

// Where the daemon of configuration `opts.config_path` listens for daxsmbd-admin.
std::optional<std::string> control_socket_path(const Options& opts, std::string* error) {
    struct stat st {};
    // Without -s and without the default file, the daemon runs on its embedded configuration.
    if (opts.config_path == kDefaultConfig && ::stat(kDefaultConfig, &st) != 0)
        return daxsmbd::server::GlobalConfig{}.control_socket;
    auto parsed = daxsmbd::server::Config::load(opts.config_path);
    if (auto* c = std::get_if<daxsmbd::server::Config>(&parsed)) return c->global.control_socket;
    const std::string& why = std::get<daxsmbd::server::Config::ParseError>(parsed).message;
    if (opts.words[0] != "reload" || ::stat(opts.config_path.c_str(), &st) != 0) {
        *error = why;
        return std::nullopt;
    }
    // A reload of a broken file still reaches the daemon, which refuses it and says why.
    return scan_control_socket(opts.config_path)
        .value_or(daxsmbd::server::GlobalConfig{}.control_socket);
}

// status / close-session / debug-connection / reload: one request to the daemon's control
// socket, its answer on stdout.
int ask_daemon(const Options& opts) {
    const std::vector<std::string>& words = opts.words;
    if (words[0] == "status" && words.size() != 1) return usage("status takes no arguments");
    if (words[0] == "reload" && words.size() != 1) return usage("reload takes no arguments");
    if (words[0] == "cluster" && !(words.size() == 2 && words[1] == "status") &&
        !(words.size() == 4 && words[1] == "move"))
        return usage("cluster takes status, or move SHARE NODE");
    if (words[0] == "close-session" && words.size() != 2)
        return usage("close-session needs exactly one session id");
    if (words[0] == "debug-connection" && words.size() != 3)
        return usage("debug-connection needs a connection id and on or off");
    std::string error;
    auto socket_path = control_socket_path(opts, &error);
    if (!socket_path) return fail(error);
    const std::string& path = *socket_path;
    if (path.empty()) return fail(opts.config_path + " sets no 'control socket'");
    std::string request = words[0];
    for (size_t i = 1; i < words.size(); ++i)
        request += " " + words[i];
    auto reply = daxsmbd::server::control::send_request(path, request);
    if (!reply.ok) return fail(reply.text);
    std::cout << reply.text;
    return 0;
}

int run(int argc, char** argv) {
    Options opts;
    if (auto status = parse_command_line(argc, argv, &opts)) return *status;
    if (!opts.words.empty() && is_daemon_command(opts.words[0])) return ask_daemon(opts);
    if (auto status = check_command(opts)) return *status;
    const std::string& action = opts.words[1];

    auto parsed = daxsmbd::server::Config::load(opts.config_path);
    if (auto* e = std::get_if<daxsmbd::server::Config::ParseError>(&parsed))
        return fail(e->message);
    const daxsmbd::server::Config& config = std::get<daxsmbd::server::Config>(parsed);
    const std::string db_path = config.global.user_database;

    std::string error;
    auto db = daxsmbd::auth::UserDatabase::load(db_path, &error);
    if (!db) return fail(db_path + ": " + error);

    if (action == "list") return list_users(*db);

    const std::string& name = opts.words[2];
    if (!valid_user_name(name, &error)) return fail(error);
    if (action == "del") return delete_user(*db, name, db_path);

    const daxsmbd::auth::UserRecord* existing = db->find(name);
    daxsmbd::auth::UserRecord rec;
    if (action == "add") {
        if (existing != nullptr)
            return fail("user '" + existing->name + "' already exists in " + db_path);
        rec.name = name;
        if (!new_user_ids(name, opts, config, &rec, &error)) return fail(error);
    } else {  // passwd: keep the name as created and the ids
        if (existing == nullptr) return fail("no user '" + name + "' in " + db_path);
        rec = *existing;
    }
    return store_user(*db, db_path, std::move(rec), opts.no_password);
}

}  // namespace

int main(int argc, char** argv) {
    return run(argc, argv);
}
