-- SPDX-License-Identifier: MIT
-- pandoc filter for the man pages built from docs/*.[1-8].md (docs/man/CMakeLists.txt).
--
-- Headings. The pages are written to read well as Markdown on their own, so most open with a level-1
-- heading "name(N)" and put NAME, SYNOPSIS, ... one level below; elastic-pool.conf.5.md uses pandoc's
-- title line instead and its sections are level 1. The title comes from the command line (-M title=,
-- section=), so this filter drops the "name(N)" heading and lifts every other heading one level:
-- sections become .SH, subsections .SS, in both shapes.
--
-- SYNOPSIS. Each source line is one form of the command: its line breaks are kept (Markdown would join
-- the lines of a paragraph into one).
--
-- Tables. pandoc's man writer makes each column (relative width x 70n) wide, and pipe tables carry no
-- widths, so every column gets an equal share; with tbl's 3n between columns the table is wider than
-- the 73n of text an 80-column terminal leaves, and long words overflow narrow columns (groff warns,
-- lintian reports each warning). Columns are sized by their content instead, within 69n in all: a
-- column whose longest cell fits an equal share of the room left gets just that; the others share what
-- remains by their longest cell (60 at most counted), each at least as wide as its longest word.
-- Each table is preceded by ".ne" as tall as its tallest cell: groff 1.22's tbl checks that a text block
-- fits in what is left of the page, and in the continuous rendering man uses on terminals the page only
-- grows at an .ne, so without one a table far down a page is reported as not fitting.

local ROOM = 69 -- n, gaps included
local GAP = 3   -- tbl's default column separation

-- as rendered: the man writer spells an ellipsis as three dots
local function text_length(s)
        s = s:gsub("\u{2026}", "...")
        return utf8.len(s) or #s
end

local function is_title(block)
        return block ~= nil and block.t == "Header" and block.level == 1
                and pandoc.utils.stringify(block.content):match("^[%w._-]+%(%d%)$") ~= nil
end

-- pandoc >= 2.17: rows have .cells, cells .contents
local function measure(row, longest, widest)
        for i, cell in ipairs(row.cells) do
                local text = pandoc.utils.stringify(cell.contents)
                longest[i] = math.max(longest[i], text_length(text))
                for word in text:gmatch("%S+") do
                        widest[i] = math.max(widest[i], text_length(word))
                end
        end
end

-- lines the tallest cell of row takes at these widths, words wrapping as they come
local function row_height(row, width)
        local tallest = 1
        for i, cell in ipairs(row.cells) do
                local lines, used = 1, 0
                for word in pandoc.utils.stringify(cell.contents):gmatch("%S+") do
                        local l = text_length(word)
                        if used > 0 and used + 1 + l > width[i] then
                                lines, used = lines + 1, l
                        else
                                used = used + (used > 0 and 1 or 0) + l
                        end
                end
                tallest = math.max(tallest, lines)
        end
        return tallest
end

local function column_widths(n, longest, widest)
        local width, fixed = {}, {}
        local left, open = ROOM - GAP * (n - 1), n

        -- short columns first: they take just what they need
        local changed = true
        while changed and open > 0 do
                changed = false
                for i = 1, n do
                        if not fixed[i] and longest[i] + 1 <= left / open then
                                fixed[i], width[i], changed = true, longest[i] + 1, true
                                left, open = left - width[i], open - 1
                        end
                end
        end
        -- the rest by weight; a column that would be narrower than its longest word gets that word
        changed = true
        while changed and open > 0 do
                changed = false
                local weight = 0
                for i = 1, n do
                        if not fixed[i] then
                                weight = weight + math.min(longest[i], 60)
                        end
                end
                for i = 1, n do
                        if not fixed[i] then
                                width[i] = left * math.min(longest[i], 60) / weight
                                if width[i] < widest[i] + 1 then
                                        fixed[i], width[i], changed = true, widest[i] + 1, true
                                        left, open = left - width[i], open - 1
                                        break
                                end
                        end
                end
        end
        return width
end

function Table(tbl)
        local n = #tbl.colspecs
        local longest, widest = {}, {}
        for i = 1, n do
                longest[i], widest[i] = 1, 1
        end
        for _, row in ipairs(tbl.head.rows) do
                measure(row, longest, widest)
        end
        for _, body in ipairs(tbl.bodies) do
                for _, row in ipairs(body.body) do
                        measure(row, longest, widest)
                end
        end
        local width = column_widths(n, longest, widest)
        for i = 1, n do
                tbl.colspecs[i] = { tbl.colspecs[i][1], width[i] / 70 }
        end
        local tallest = 1
        for _, body in ipairs(tbl.bodies) do
                for _, row in ipairs(body.body) do
                        tallest = math.max(tallest, row_height(row, width))
                end
        end
        return { pandoc.RawBlock("man", string.format(".ne %dv", tallest + 2)), tbl }
end

local function keep_line_breaks(block)
        return pandoc.walk_block(block, {
                SoftBreak = function()
                        return pandoc.LineBreak()
                end,
        })
end

function Pandoc(doc)
        local blocks = pandoc.List()
        local lift = is_title(doc.blocks[1])
        local section = nil

        for i, block in ipairs(doc.blocks) do
                if i == 1 and lift then
                        goto continue
                end
                if block.t == "Header" then
                        if lift then
                                block.level = math.max(1, block.level - 1)
                        end
                        if block.level == 1 then
                                section = pandoc.utils.stringify(block.content)
                        end
                elseif section == "SYNOPSIS" and block.t == "Para" then
                        block = keep_line_breaks(block)
                end
                blocks:insert(block)
                ::continue::
        end
        doc.blocks = blocks
        return doc
end
