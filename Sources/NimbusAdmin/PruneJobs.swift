import Foundation
import NimbusCore
import NimbusStore
import NimbusSupport

/// The scheduled prune of `serve`: the options it runs with and when it runs next (set by the
/// job before each wait), for the console's overview and retention pages.
package final class PruneSchedule: Sendable {
    package let options: PruneOptions
    private let next = Lock<Date?>(nil)

    package init(options: PruneOptions) {
        self.options = options
    }

    /// When the job runs next; nil when it is disabled.
    package var nextAt: Date? { next.withLock { $0 } }

    package func setNext(_ date: Date?) {
        next.withLock { $0 = date }
    }
}

/// The one prune (or dry run) the console runs at a time, in the background, with its progress
/// lines and its report once finished. Instances share the pruner's advisory lock: a prune
/// already running elsewhere makes this one wait for it.
final class ConsolePruneJob: Sendable {
    struct State: Sendable {
        var id: Int
        var dryRun: Bool
        var startedBy: String
        var startedAt: Date
        var lines: [String] = []
        var finishedAt: Date?
        var report: PruneReport?
        var error: String?
    }

    /// Progress lines kept per run (the newest).
    static let maxLines = 200

    private let state = Lock<State?>(nil)

    var current: State? { state.withLock { $0 } }

    /// Starts a run; CONFLICT while one is running. `first` runs before the prune (its audit
    /// entry) with the run's id; when it throws, the run ends with that error, having deleted nothing.
    func start(store: Store, options: PruneOptions, limits: Limits, dryRun: Bool, by admin: AdminIdentity,
               first: @escaping @Sendable (Int) async throws -> Void = { _ in }) throws -> State {
        var options = options
        options.dryRun = dryRun
        let started = try state.withLock { current -> State in
            if let running = current, running.finishedAt == nil {
                throw SyncError(.conflict, "A \(running.dryRun ? "dry run" : "prune") started by \(running.startedBy) is still running; wait for it to finish.")
            }
            let next = State(id: (current?.id ?? 0) + 1, dryRun: dryRun, startedBy: admin.name, startedAt: Date())
            current = next
            return next
        }
        let id = started.id
        Task {
            do {
                try await first(id)
                let report = try await store.pruner.prune(options, limits: limits, wait: true, progress: { [weak self] line in
                    self?.update(id) { state in
                        state.lines.append(line)
                        if state.lines.count > Self.maxLines { state.lines.removeFirst(state.lines.count - Self.maxLines) }
                    }
                })
                update(id) { state in
                    state.report = report
                    state.finishedAt = Date()
                }
            } catch {
                update(id) { state in
                    state.error = (error as? SyncError)?.reason ?? "\(error)"
                    state.finishedAt = Date()
                }
            }
        }
        return started
    }

    private func update(_ id: Int, _ change: (inout State) -> Void) {
        state.withLock { current in
            guard var value = current, value.id == id else { return }
            change(&value)
            current = value
        }
    }
}
