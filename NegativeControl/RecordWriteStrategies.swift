/// The negative-control build's one write strategy (NegativeControlWrite.swift); this file takes
/// the place of Sources/NimbusStore/Records/Write/RecordWriteStrategies.swift.
extension RecordStore {
    static let writeStrategies: [any RecordWriteStrategy] = [NegativeControlWrite()]
}
