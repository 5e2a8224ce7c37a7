import NimbusWire
import Testing

/// One input for a table-driven parser test, named after JSONTestSuite's file where there is one.
struct JSONCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var expected: JSONValue?

    init(_ name: String, _ text: String, _ expected: JSONValue? = nil) {
        self.name = name
        self.bytes = Array(text.utf8)
        self.expected = expected
    }

    init(_ name: String, bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
        self.expected = nil
    }

    var testDescription: String { name }
}

/// Table-driven acceptance and rejection, after the cases of JSONTestSuite (y_ must parse, n_ must not).
@Suite struct JSONTestSuiteTests {
    static let accepted: [JSONCase] = [
        JSONCase("y_object_empty", "{}", .object([:])),
        JSONCase("y_array_empty", "[]", .array([])),
        JSONCase("y_array_empty_with_spaces", "  [ ]  ", .array([])),
        JSONCase("y_whitespace_all_four_kinds", " \t\r\n{ \"a\" : [ 1 , 2 ] }\n\t", ["a": [1, 2]]),
        JSONCase("y_structure_lonely_int", "42", .integer(42)),
        JSONCase("y_structure_lonely_string", "\"asd\"", .string("asd")),
        JSONCase("y_structure_lonely_true", "true", .bool(true)),
        JSONCase("y_structure_lonely_false", "false", .bool(false)),
        JSONCase("y_structure_lonely_null", " null ", .null),
        JSONCase("y_number_minus_zero", "[-0]", [.integer(0)]),
        JSONCase("y_number_real_capital_e", "[1E22]", [.double(1e22)]),
        JSONCase("y_number_real_capital_e_pos_exp", "[1E+2]", [.double(100)]),
        JSONCase("y_number_real_neg_exp", "[1e-2]", [.double(0.01)]),
        JSONCase("y_number_real_fraction_exponent", "[123.456e78]", [.double(123.456e78)]),
        JSONCase("y_number_real_underflow", "[123e-10000000]", [.double(0)]),
        JSONCase("y_number_huge_exp_zero", "[0e1000000000000]", [.double(0)]),
        JSONCase("y_number_negative_int", "[-123]", [.integer(-123)]),
        JSONCase("y_number_simple_real", "[123.456789]", [.double(123.456789)]),
        JSONCase("y_number_long_fraction_cancelled_by_exponent", "[0." + String(repeating: "0", count: 1_000_004) + "1e1000000]", [.double(1e-5)]),
        JSONCase("y_number_exponent_leading_zeros", "[1e007]", [.double(1e7)]),
        JSONCase("y_number_max_subnormal_input", "[4.9e-324]", [.double(.leastNonzeroMagnitude)]),
        JSONCase("y_number_max_double", "[1.7976931348623157e308]", [.double(.greatestFiniteMagnitude)]),
        JSONCase("y_string_null_escape", #"["\u0000"]"#, ["\u{0}"]),
        JSONCase("y_string_unicode_escape", #"["\u00e9\u4e2D"]"#, ["é中"]),
        JSONCase("y_string_surrogate_pair", #"["\uD83D\uDE00"]"#, ["😀"]),
        JSONCase("y_string_last_surrogates_1_and_2", #"["\uDBFF\uDFFF"]"#, ["\u{10FFFF}"]),
        JSONCase("y_string_raw_utf8", "[\"日本語 😀 é\"]", ["日本語 😀 é"]),
        JSONCase("y_string_all_simple_escapes", #"["\"\\\/\b\f\n\r\t"]"#, ["\"\\/\u{8}\u{C}\n\r\t"]),
        JSONCase("y_string_u2028_u2029", #"["\u2028\u2029"]"#, ["\u{2028}\u{2029}"]),
        JSONCase("y_string_raw_delete", "[\"\u{7F}\"]", ["\u{7F}"]),
        JSONCase("y_string_escaped_noncharacter", #"["\uFFFF"]"#, ["\u{FFFF}"]),
        JSONCase("y_string_in_array_with_leading_space", "[ \"a\"]", ["a"]),
        JSONCase("y_array_heterogeneous", #"[1,"a",null,true,false,{},[]]"#, [1, "a", .null, true, false, .object([:]), []]),
        JSONCase("y_array_nested", "[[[[[]]]]]", [[[[[]]]]]),
        JSONCase("y_object_nested", #"{"a":{"b":{"c":[]}}}"#, ["a": ["b": ["c": []]]]),
        JSONCase("y_object_empty_key", #"{"":0}"#, ["": 0]),
        JSONCase("y_object_keys_differ_in_case", #"{"a":1,"A":2}"#, ["a": 1, "A": 2]),
        JSONCase("y_object_escaped_key", #"{"\u0061b":1}"#, ["ab": 1]),
    ]

    @Test(arguments: accepted)
    func acceptsValidDocument(_ input: JSONCase) throws {
        let value = try JSONValue.parse(input.bytes)
        #expect(value == input.expected)
    }

    static let rejected: [JSONCase] = [
        JSONCase("n_structure_no_data", ""),
        JSONCase("n_structure_whitespace_only", " \n "),
        JSONCase("n_array_extra_comma", "[1,]"),
        JSONCase("n_object_trailing_comma", #"{"a":1,}"#),
        JSONCase("n_array_comma_first", "[,1]"),
        JSONCase("n_array_double_comma", "[1,,2]"),
        JSONCase("n_array_missing_comma", "[1 2]"),
        JSONCase("n_object_missing_comma", #"{"a":1 "b":2}"#),
        JSONCase("n_object_double_comma", #"{"a":1,,"b":2}"#),
        JSONCase("n_object_lone_comma", "{,}"),
        JSONCase("n_string_single_quote", "['a']"),
        JSONCase("n_object_single_quoted_key", "{'a':1}"),
        JSONCase("n_object_unquoted_key", "{a:1}"),
        JSONCase("n_object_non_string_key", "{1:1}"),
        JSONCase("n_object_missing_colon", #"{"a" 1}"#),
        JSONCase("n_object_missing_value", #"{"a":}"#),
        JSONCase("n_object_key_only", #"{"a"}"#),
        JSONCase("n_object_duplicate_key", #"{"a":1,"a":2}"#),
        JSONCase("n_structure_trailing_line_comment", "[1] // c"),
        JSONCase("n_structure_leading_block_comment", "/* c */ [1]"),
        JSONCase("n_structure_comment_inside", "[1/* c */]"),
        JSONCase("n_number_leading_zero", "[01]"),
        JSONCase("n_number_negative_leading_zero", "[-01]"),
        JSONCase("n_number_double_zero", "[00]"),
        JSONCase("n_number_plus", "[+1]"),
        JSONCase("n_number_starting_with_dot", "[.5]"),
        JSONCase("n_number_trailing_dot", "[1.]"),
        JSONCase("n_number_dot_then_exponent", "[1.e5]"),
        JSONCase("n_number_bare_exponent", "[1e]"),
        JSONCase("n_number_exponent_sign_only", "[1e+]"),
        JSONCase("n_number_exponent_two_signs", "[1.5e+-3]"),
        JSONCase("n_number_fractional_exponent", "[1e1.5]"),
        JSONCase("n_number_minus_alone", "[-]"),
        JSONCase("n_number_double_minus", "[--1]"),
        JSONCase("n_number_NaN", "[NaN]"),
        JSONCase("n_number_infinity", "[Infinity]"),
        JSONCase("n_number_minus_infinity", "[-Infinity]"),
        JSONCase("n_number_hex", "[0x10]"),
        JSONCase("n_number_too_big", "[1e400]"),
        JSONCase("n_number_too_big_negative", "[-1e400]"),
        JSONCase("n_number_too_many_integer_digits", "[" + String(repeating: "9", count: 400) + "]"),
        JSONCase("n_number_huge_exponent_cancelled_by_long_fraction", "[0." + String(repeating: "0", count: 1_000_004) + "1e1000000000]"),
        JSONCase("n_string_lone_high_surrogate", #"["\uD800"]"#),
        JSONCase("n_string_lone_low_surrogate", #"["\uDC00"]"#),
        JSONCase("n_string_surrogates_reversed", #"["\uDC00\uD800"]"#),
        JSONCase("n_string_high_surrogate_then_letter", #"["\uD800\u0041"]"#),
        JSONCase("n_string_high_surrogate_then_newline_escape", #"["\uD800\n"]"#),
        JSONCase("n_string_pair_then_lone_high", #"["\uD834\uDD1E\uD834"]"#),
        JSONCase("n_string_short_unicode_escape", #"["\u12"]"#),
        JSONCase("n_string_non_hex_unicode_escape", #"["\uZZZZ"]"#),
        JSONCase("n_string_escape_x", #"["\x41"]"#),
        JSONCase("n_string_escape_a", #"["\a"]"#),
        JSONCase("n_string_escaped_apostrophe", #"["\'"]"#),
        JSONCase("n_string_backslash_at_end", #"[""# + "\\"),
        JSONCase("n_string_escaped_quote_unterminated", #"["\"]"#),
        JSONCase("n_string_overlong_nul", bytes: [0x22, 0xC0, 0x80, 0x22]),
        JSONCase("n_string_byte_ff", bytes: [0x22, 0xFF, 0x22]),
        JSONCase("n_string_lone_continuation_byte", bytes: [0x22, 0x80, 0x22]),
        JSONCase("n_string_overlong_three_byte", bytes: [0x22, 0xE0, 0x80, 0xAF, 0x22]),
        JSONCase("n_string_overlong_four_byte", bytes: [0x22, 0xF0, 0x80, 0x80, 0xAF, 0x22]),
        JSONCase("n_string_utf8_encoded_surrogate", bytes: [0x22, 0xED, 0xA0, 0x80, 0x22]),
        JSONCase("n_string_above_u10ffff", bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]),
        JSONCase("n_string_lead_byte_f5", bytes: [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22]),
        JSONCase("n_string_truncated_sequence", bytes: [0x22, 0xE2, 0x82, 0x22]),
        JSONCase("n_string_truncated_at_end_of_input", bytes: [0x22, 0xE2, 0x82]),
        JSONCase("n_string_raw_tab", bytes: Array("[\"a\tb\"]".utf8)),
        JSONCase("n_string_raw_newline", bytes: Array("[\"a\nb\"]".utf8)),
        JSONCase("n_string_raw_nul", bytes: [0x5B, 0x22, 0x00, 0x22, 0x5D]),
        JSONCase("n_string_raw_unit_separator", bytes: [0x22, 0x1F, 0x22]),
        JSONCase("n_string_raw_control_after_escape", bytes: Array("[\"\\n\u{1}\"]".utf8)),
        JSONCase("n_string_unterminated", #"["abc"#),
        JSONCase("n_string_quote_alone", "\""),
        JSONCase("n_array_unclosed", "[1"),
        JSONCase("n_array_unclosed_after_comma", "[1,2,"),
        JSONCase("n_array_open_bracket_alone", "["),
        JSONCase("n_object_unclosed", #"{"a":1"#),
        JSONCase("n_object_open_brace_alone", "{"),
        JSONCase("n_structure_trailing_garbage", "[1] x"),
        JSONCase("n_structure_extra_close_bracket", "[1]]"),
        JSONCase("n_structure_extra_close_brace", "{}}"),
        JSONCase("n_structure_two_values", "1 2"),
        JSONCase("n_structure_mismatched_brackets", "[}"),
        JSONCase("n_incomplete_true", "tru"),
        JSONCase("n_capitalized_true", "True"),
        JSONCase("n_incomplete_null", "[nul]"),
        JSONCase("n_null_with_extra_letter", "[nulll]"),
        JSONCase("n_structure_utf8_bom", bytes: [0xEF, 0xBB, 0xBF, 0x5B, 0x5D]),
        JSONCase("n_structure_form_feed_whitespace", "[1]\u{C}"),
        JSONCase("n_structure_vertical_tab_whitespace", "\u{B}[1]"),
        JSONCase("n_structure_nbsp_whitespace", "[\u{A0}1]"),
        JSONCase("n_structure_nul_after_value", bytes: [0x5B, 0x5D, 0x00]),
        JSONCase("n_structure_100000_opening_arrays", String(repeating: "[", count: 100_000)),
        JSONCase("n_structure_100000_closed_arrays", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)),
        JSONCase("n_structure_deep_objects", String(repeating: #"{"a":"#, count: 1000) + "1" + String(repeating: "}", count: 1000)),
    ]

    @Test(arguments: rejected)
    func rejectsInvalidDocument(_ input: JSONCase) {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(input.bytes) }
    }
}
