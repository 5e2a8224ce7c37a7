import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The words of a `networkFailure`: what was asked of whom, and what happened (timed out after how
/// many seconds, refused, lost mid-answer), from URLSession's error codes.
enum NetworkFailureText {
    static func error(_ error: any Error, url: URL?, timeout: TimeInterval?) -> NimbusError {
        let ns = error as NSError
        let target = describe(url)
        let reason: String
        if ns.domain == NSURLErrorDomain {
            switch URLError.Code(rawValue: ns.code) {
            case .timedOut:
                let limit = timeout.map { " after \(seconds($0)) s" } ?? ""
                reason = "The request to \(target) timed out\(limit) without an answer (NimbusConfiguration.requestTimeout); "
                    + "the server or the network is slow or unreachable."
            case .cannotConnectToHost:
                reason = "Could not connect to \(host(url)): the connection was refused (is the server running there?)."
            case .networkConnectionLost:
                reason = "The connection to \(host(url)) was lost before \(target) answered."
            case .notConnectedToInternet:
                reason = "This device is offline: the request to \(target) was not sent."
            case .cannotFindHost, .dnsLookupFailed:
                reason = "The host name of \(host(url)) could not be resolved."
            case .cancelled:
                reason = "The request to \(target) was cancelled."
            case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
                 .serverCertificateHasUnknownRoot:
                reason = "The TLS connection to \(host(url)) failed (\(ns.localizedDescription))."
            default:
                reason = "No answer from \(target): \(ns.localizedDescription) (URL error \(ns.code))."
            }
        } else {
            reason = "No answer from \(target): \(ns.localizedDescription)."
        }
        return NimbusError(.networkFailure, reason: reason)
    }

    /// `host:port/path` of a request, without its query (upload URLs carry tokens there).
    static func describe(_ url: URL?) -> String {
        guard let url else { return "the server" }
        return host(url) + url.path
    }

    static func host(_ url: URL?) -> String {
        guard let url, let host = url.host else { return "the server" }
        return url.port.map { "\(host):\($0)" } ?? host
    }

    static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}
