/// The order `records/modify` tries its write strategies in. Each passes before writing when the
/// request is not for it; `LockedWrite` takes every request, so it comes last.
///
/// The negative control for the no-missed-change checker (docs/checker.md) is a build of the side
/// package `NegativeControl/` that replaces this one file; nothing of it is in a real build.
extension RecordStore {
    static let writeStrategies: [any RecordWriteStrategy] = [FastCreate(), OptimisticWrite(), LockedWrite()]
}
