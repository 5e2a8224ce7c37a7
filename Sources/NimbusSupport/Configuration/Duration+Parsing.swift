/// Parsing of the operator-facing duration syntax: a whole number with `s`, `m`, `h` or `d`
/// (`30d`, `0s`, `90s`).
package enum DurationText {
    /// Seconds for a duration such as `30d`; nil when the text is not of that form.
    package static func seconds(_ text: String) -> Int64? {
        guard let unit = text.last, text.count >= 2 else { return nil }
        let digits = text.dropLast()
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(digits) else { return nil }
        let factor: Int64
        switch unit {
        case "s": factor = 1
        case "m": factor = 60
        case "h": factor = 3600
        case "d": factor = 86400
        default: return nil
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: factor)
        return overflow ? nil : product
    }
}

extension DurationText {
    /// A moment relative to now for people: "in 5h", "in 40m", "overdue by 360h" (whole hours
    /// from 2 h on, else minutes, else seconds).
    package static func relative(seconds: Double) -> String {
        let magnitude = abs(seconds)
        let amount: String
        if magnitude >= 7200 {
            amount = "\(Int(magnitude / 3600))h"
        } else if magnitude >= 120 {
            amount = "\(Int(magnitude / 60))m"
        } else {
            amount = "\(Int(magnitude))s"
        }
        return seconds < 0 ? "overdue by \(amount)" : "in \(amount)"
    }
}
