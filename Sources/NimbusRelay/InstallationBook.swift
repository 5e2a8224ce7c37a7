import NimbusSupport

/// The running relay's view of `installations.json`: re-read whenever the file changes (checked with
/// one `stat` per request), so an installation added or revoked by the CLI counts from the next
/// request on, with no restart and no signal. A file that cannot be read fails closed.
package final class InstallationBook: Sendable {
    private let file: InstallationFile
    private let state = Lock<State>(State())

    private struct State {
        var version: InstallationFile.FileVersion?
        var loaded = false
        var byID: [String: Installation] = [:]
        var failure: InstallationFile.Failure?
    }

    package init(file: InstallationFile) {
        self.file = file
    }

    /// The installation with `id` (revoked ones included), nil if there is none; throws when the
    /// list cannot be read.
    package func installation(id: String) throws(InstallationFile.Failure) -> Installation? {
        let version = file.version()
        let result: Result<Installation?, InstallationFile.Failure> = state.withLock { state in
            if !state.loaded || state.version != version {
                state.loaded = true
                state.version = version
                switch Result(catching: { () throws(InstallationFile.Failure) in try file.read() }) {
                case .success(let installations):
                    state.byID = Dictionary(installations.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
                    state.failure = nil
                case .failure(let failure):
                    state.byID = [:]
                    state.failure = failure
                }
            }
            if let failure = state.failure { return .failure(failure) }
            return .success(state.byID[id])
        }
        return try result.get()
    }

    /// Reads the list now (at start, to refuse a bad file before listening); the live installations' count.
    package func load() throws(InstallationFile.Failure) -> Int {
        let installations = try file.read()
        state.withLock { state in
            state.loaded = true
            state.version = file.version()
            state.byID = Dictionary(installations.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
            state.failure = nil
        }
        return installations.filter { !$0.isRevoked }.count
    }
}
