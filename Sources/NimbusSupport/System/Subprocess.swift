import Foundation
import Glibc

/// Runs a program to completion and captures its output (start-up and admin paths only).
///
/// Built on posix_spawn rather than Foundation's Process: Process detects a child's exit through
/// a descriptor the child inherits, and a daemon the child leaves behind (pg_ctl starting
/// postgres) keeps it open, so the parent never learns that the child ended. Here the child gets
/// stdin from /dev/null and stdout and stderr into our pipe.
package struct Subprocess: Sendable {
    package struct Outcome: Sendable {
        package var status: Int32
        package var output: String

        package var succeeded: Bool { status == 0 }
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Runs `executable` with `arguments`; standard output and error are captured together.
    package static func run(_ executable: String, _ arguments: [String]) throws -> Outcome {
        var pipeDescriptors: [Int32] = [0, 0]
        guard pipe(&pipeDescriptors) == 0 else {
            throw Failure(description: "pipe failed: \(String(cString: strerror(errno)))")
        }
        let (readEnd, writeEnd) = (pipeDescriptors[0], pipeDescriptors[1])
        // Close-on-exec: only the dup2'd copies (1, 2) reach the child. The server opens all of
        // its own descriptors close-on-exec too, so a daemon the child leaves holds none of ours.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(writeEnd)
        guard status == 0 else {
            close(readEnd)
            throw Failure(description: "cannot run \(executable): \(String(cString: strerror(status)))")
        }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count > 0 {
                output += buffer[0..<count]
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                break
            }
        }
        close(readEnd)
        var waitStatus: Int32 = 0
        while waitpid(pid, &waitStatus, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros; decode the status word by hand.
        let exitCode: Int32 = (waitStatus & 0x7f) == 0 ? (waitStatus >> 8) & 0xff : 128 + (waitStatus & 0x7f)
        return Outcome(status: exitCode, output: String(decoding: output, as: UTF8.self))
    }

    /// The first executable named `name` on PATH, or in one of `fallbackDirectories`.
    package static func find(_ name: String, fallbackDirectories: [String] = []) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + fallbackDirectories {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
