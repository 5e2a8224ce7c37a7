/// Which app (APNs topic = bundle id) each container's pushes go to: the operator's
/// `--apns-topics CONTAINER=BUNDLE_ID[,CONTAINER=BUNDLE_ID…]`.
package struct APNsTopics: Sendable, Equatable {
    /// Why a topic map was refused, as a sentence naming the bad entry.
    package struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        package var description: String
    }

    package let bundleIDs: [String: String]

    package init(_ bundleIDs: [String: String]) {
        self.bundleIDs = bundleIDs
    }

    /// The topic for `container`, or nil when the operator configured none (registration refuses it).
    package func topic(for container: String) -> String? {
        bundleIDs[container]
    }

    /// Parses `CONTAINER=BUNDLE_ID,…`; refuses an empty map, an entry without `=`, an empty side,
    /// a bundle id with characters Apple does not allow (letters, digits, `.` and `-`), or a container twice.
    package static func parse(_ text: String) throws(ParseError) -> APNsTopics {
        var bundleIDs: [String: String] = [:]
        for entry in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = entry.trimmingASCIISpaces()
            let parts = trimmed.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw ParseError(description: "the APNs topic map entry '\(trimmed)' is not CONTAINER=BUNDLE_ID (--apns-topics)")
            }
            let container = parts[0].trimmingASCIISpaces(), bundleID = parts[1].trimmingASCIISpaces()
            guard !container.isEmpty, !container.contains(where: { $0 == " " || $0 == "=" }) else {
                throw ParseError(description: "the APNs topic map entry '\(trimmed)' names no container (--apns-topics)")
            }
            guard !bundleID.isEmpty, bundleID.utf8.allSatisfy(isBundleIDByte) else {
                throw ParseError(description: "the APNs topic map gives container \(container) the bundle id '\(bundleID)', "
                    + "which is not one (letters, digits, '.' and '-') (--apns-topics)")
            }
            guard bundleIDs.updateValue(bundleID, forKey: container) == nil else {
                throw ParseError(description: "the APNs topic map names container \(container) twice (--apns-topics)")
            }
        }
        return APNsTopics(bundleIDs)
    }

    private static func isBundleIDByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }
}

extension StringProtocol {
    fileprivate func trimmingASCIISpaces() -> String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
