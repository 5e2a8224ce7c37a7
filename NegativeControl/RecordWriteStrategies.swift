/// The negative-control build's one write strategy (NegativeControlWrite.swift); this file takes
/// the place of Sources/NimbusStore/RecordWriteStrategies.swift.
extension RecordStore {
    static let writeStrategies: [any RecordWriteStrategy] = [NegativeControlWrite()]
}
