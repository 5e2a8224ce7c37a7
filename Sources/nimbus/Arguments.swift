import Foundation

/// One option of a command: `--name VALUE`, with an environment variable and a default.
struct OptionSpec: Sendable {
    var name: String
    var valueName: String = "VALUE"
    var environment: String?
    var defaultValue: String?
    var help: String
    /// A flag takes no value (`--dry-run`).
    var isFlag = false
    /// A libpq connection string: shown only through `ConnectionString.redacted` (its secrets hidden).
    var isConnectionString = false
    /// Names a secret (a key file): shown as `redacted` wherever options are listed.
    var isSecret = false
}

/// A command's definition: what `--help` prints and what the parser accepts.
struct CommandSpec: Sendable {
    var name: String
    var overview: String
    var usage: String
    var options: [OptionSpec]
    var positionals: [(name: String, help: String)] = []
    var subcommands: [(name: String, overview: String)] = []

    var helpText: String {
        var text = "OVERVIEW: \(overview)\n\nUSAGE: \(usage)\n"
        if !positionals.isEmpty {
            text += "\nARGUMENTS:\n"
            for positional in positionals {
                text += Self.helpLine(positional.name, positional.help)
            }
        }
        if !subcommands.isEmpty {
            text += "\nSUBCOMMANDS:\n"
            for subcommand in subcommands {
                text += Self.helpLine(subcommand.name, subcommand.overview)
            }
        }
        text += "\nOPTIONS:\n"
        for option in options + [OptionSpec(name: "help", help: "Show help information.", isFlag: true)] {
            let left = option.isFlag ? "--\(option.name)" : "--\(option.name) <\(option.valueName)>"
            var right = option.help
            if let environment = option.environment { right += " (env \(environment))" }
            if let defaultValue = option.defaultValue { right += " (default: \(defaultValue))" }
            text += Self.helpLine(left, right)
        }
        return text
    }

    /// One help entry: the name in a 28-column field, or on a line of its own when longer
    /// (never cut), then the text.
    static func helpLine(_ name: String, _ text: String) -> String {
        guard name.count < 28 else { return "  \(name)\n  \(String(repeating: " ", count: 28)) \(text)\n" }
        return "  \(name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(text)\n"
    }
}

extension CommandSpec {
    /// Parses `argv` against this spec; nil after printing the help when `--help` was asked.
    func parse(_ argv: [String]) throws -> ParsedArguments? {
        let arguments = try ParsedArguments(argv, spec: self)
        guard !arguments.helpRequested else {
            print(helpText)
            return nil
        }
        return arguments
    }
}

/// A usage error: exits 64 with a sentence naming what was wrong.
struct UsageError: Error, CustomStringConvertible {
    var message: String
    var command: String
    var description: String { message }
}

/// Parsed arguments: flag > environment > default.
struct ParsedArguments: Sendable {
    let spec: CommandSpec
    var values: [String: String] = [:]
    /// Every value of options given more than once (`--record-type A --record-type B`).
    var repeatedValues: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var helpRequested = false

    /// Parses `arguments` (after the command name) against `spec`.
    init(_ arguments: [String], spec: CommandSpec) throws {
        self.spec = spec
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--help" || argument == "-h" {
                helpRequested = true
                continue
            }
            guard argument.hasPrefix("--") else {
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                throw UsageError(message: "unknown option '--\(name)' for 'nimbus \(spec.name)'", command: spec.name)
            }
            if option.isFlag {
                guard inlineValue == nil else {
                    throw UsageError(message: "option '--\(name)' takes no value", command: spec.name)
                }
                flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw UsageError(message: "option '--\(name)' needs a value <\(option.valueName)>", command: spec.name)
                }
                value = arguments[index]
                index += 1
            }
            values[name] = value
            repeatedValues[name, default: []].append(value)
        }
    }

    /// The option's value: from the command line, else its environment variable, else default.
    func value(_ name: String) -> String? {
        if let value = values[name] { return value }
        guard let option = spec.options.first(where: { $0.name == name }) else { return nil }
        if let variable = option.environment, let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty {
            return value
        }
        return option.defaultValue
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// Throws a usage error when the command was given arguments it takes none of.
    func refusePositionals() throws {
        if let first = positionals.first {
            throw UsageError(message: "unexpected argument '\(first)'", command: spec.name)
        }
    }

    /// All values of a repeatable option, in order.
    func repeated(_ name: String) -> [String] { repeatedValues[name] ?? [] }

    /// An integer option; a value that is not one is a usage error naming the option.
    func integer(_ name: String) throws -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), number >= 0 else {
            throw UsageError(message: "option '--\(name)' needs a non-negative whole number, not '\(text)'", command: spec.name)
        }
        return number
    }

    /// A number of seconds (fractions allowed).
    func seconds(_ name: String) throws -> Double? {
        guard let text = value(name) else { return nil }
        guard let number = Double(text), number >= 0, number.isFinite else {
            throw UsageError(message: "option '--\(name)' needs a number of seconds, not '\(text)'", command: spec.name)
        }
        return number
    }
}

extension String {
    /// `maxRequestBytes` → `max-request-bytes`.
    var kebabCased: String {
        var result = ""
        for character in self {
            if character.isUppercase {
                result += "-" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// `maxRequestBytes` → `MAX_REQUEST_BYTES`.
    var screamingSnakeCased: String {
        kebabCased.replacingOccurrences(of: "-", with: "_").uppercased()
    }
}
