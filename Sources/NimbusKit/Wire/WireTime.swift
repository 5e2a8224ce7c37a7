import Foundation

/// TIMESTAMPs travel as whole milliseconds since 1970.
enum WireTime {
    static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        guard ms.isFinite, ms > Double(Int64.min), ms < Double(Int64.max) else { return 0 }
        return Int64(ms)
    }

    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
