"""Chinese statement rules: what a user's Chinese sentence says about them (data).

Confidences mean what they mean for the English rules (memory.extraction.personal_rules).
Chinese writes no spaces, so there are no word boundaries: rules start at "我" (I) or
"我们" (we) and read characters; an object is "something" when a character that is not
a particle or a pronoun follows.
"""

from __future__ import annotations

import re

from mnemobot.memory.store.items import ItemType
from mnemobot.memory.write.extraction.language import CHINESE, LanguageRules, word_set
from mnemobot.memory.write.extraction.personal_rules import statement_rule

_F = "fact"
_P = "preference"
# "I", then adverbs that do not change the statement ("我现在也").
_I = r"我(?:现在|目前|一直|也|还|都|真的|已经|其实)*"
_MY = r"我的?[^，。,！？!?\s]{0,2}?"
_RELATIVES = (
    r"(?:妻子|老婆|太太|爱人|丈夫|老公|先生|女朋友|男朋友|女友|男友|对象|未婚妻|未婚夫|姐姐|妹妹"
    r"|哥哥|弟弟|姐妹|兄弟|妈妈|母亲|爸爸|父亲|父母|爸妈|儿子|女儿|孩子|宝宝|爷爷|奶奶|外公|外婆"
    r"|姥姥|姥爷|叔叔|阿姨|舅舅|姑姑|表哥|表姐|堂哥|朋友|闺蜜|室友|同事|老板|领导|上司|狗狗|小狗"
    r"|狗|猫咪|小猫|猫|宠物|鹦鹉|仓鼠|兔子)"
)
_PROFESSIONS = (
    r"(?:工程师|程序员|开发者|开发人员|码农|老师|教师|教授|医生|大夫|护士|学生|大学生|研究生|博士生"
    r"|设计师|律师|经理|作家|厨师|会计|科学家|研究员|司机|警察|演员|歌手|记者|建筑师|艺术家|画家"
    r"|音乐家|摄影师|翻译|销售|创业者|自由职业者|公务员|军人|飞行员|农民|素食者|素食主义者|产品经理"
    r"|分析师|咨询师|心理咨询师|兽医|牙医)"
)
_COUNT = r"(?:一|两|二|三|四|五|几|\d+)?(?:只|条|个|匹|位|头)?"

PERSONAL = (
    statement_rule(
        ItemType.PREFERENCE, _I + r"(?:更喜欢|更爱|偏好|偏爱|比较喜欢|倾向于)", 0.9, 0.7, _P
    ),
    statement_rule(
        ItemType.PREFERENCE,
        _I + r"(?:很|非常|特别|超级|超|最|挺|蛮|好)?(?:喜欢|喜爱|热爱|爱)",
        0.85,
        0.65,
        _P,
    ),
    statement_rule(
        ItemType.PREFERENCE,
        _I + r"(?:很|非常|特别|最|真的)?(?:讨厌|不喜欢|不爱|受不了|不能忍受|不太喜欢|反感)",
        0.85,
        0.65,
        "dislike",
    ),
    statement_rule(ItemType.PREFERENCE, r"我最(?:喜欢|爱)的[^，。,]{1,10}?是", 0.85, 0.7, _P),
    # Where they live and come from.
    statement_rule(
        ItemType.PROJECT_FACT, _I + r"(?:住在|生活在|居住在|定居在|定居于|住于)", 0.85, 0.7, _F
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        _I + r"在[^，。,]{1,12}?(?:住|生活|定居|长大)(?!院)",
        0.85,
        0.7,
        _F,
        needs_object=None,
    ),
    statement_rule(ItemType.PROJECT_FACT, _I + r"来自", 0.85, 0.7, _F),
    statement_rule(ItemType.PROJECT_FACT, _I + r"(?:出生在|出生于|生于)", 0.9, 0.7, _F),
    statement_rule(ItemType.PROJECT_FACT, _I + r"(?:搬到了?|搬去了?|移居到?)", 0.8, 0.65, _F),
    # Work and study.
    statement_rule(
        ItemType.PROJECT_FACT,
        _I + r"在(?!努力|认真|拼命|家里?休息)[^，。,]{1,20}?"
        r"(?:工作|上班|实习|任职|上学|读书|上大学)",
        0.85,
        0.7,
        _F,
        needs_object=None,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"我的工作是", 0.85, 0.7, _F),
    statement_rule(
        ItemType.PROJECT_FACT,
        _I + r"(?:是|当)(?:一名|一个|一位|个|名)?[^，。,不]{0,6}?" + _PROFESSIONS,
        0.85,
        0.7,
        _F,
        needs_object=None,
    ),
    # Family, partner and pets.
    statement_rule(
        ItemType.PROJECT_FACT,
        _MY + _RELATIVES + r"[^，。,]{0,6}?(?:叫|名叫|名字叫|的名字是|住在|生活在|来自|今年|出生"
        r"|是(?:一名|一个|一位|个|名)|在[^，。,]{1,12}?(?:工作|上班|上学)|对[^，。,]{1,10}?过敏)",
        0.85,
        0.7,
        _F,
        needs_object=None,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        _MY + _RELATIVES + r"[^，。,]{0,6}?(?:喜欢|爱|有|是|会)",
        0.7,
        0.6,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"我(?:已经)?(?:结婚了|结婚|已婚|离婚了|离婚|订婚了|订婚|单身|怀孕了|退休了|退休)"
        r"|我和[^，。,]{1,10}?结婚",
        0.85,
        0.75,
        _F,
        needs_object=None,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"我家?(?:有|养了?|养着)" + _COUNT + r"[^，。,]{0,4}?(?:狗|猫|鸟|鹦鹉|仓鼠|兔子|鱼|宠物|马"
        r"|孩子|儿子|女儿|姐姐|妹妹|哥哥|弟弟)",
        0.85,
        0.65,
        _F,
        needs_object=None,
    ),
    # Health and diet.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"我对[^，。,]{1,12}?过敏|我(?:有|患有)[^，。,]{0,8}?过敏",
        0.9,
        0.85,
        _F,
        needs_object=None,
    ),
    statement_rule(ItemType.PROJECT_FACT, _I + r"(?:不吃|不能吃|不喝|不能喝)", 0.85, 0.75, _F),
    statement_rule(ItemType.PROJECT_FACT, _I + r"吃素", 0.85, 0.75, _F, needs_object=None),
    # Name, age, contacts.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"我的?(?:电话号码|手机号码|手机号|电话|手机|邮箱|电子邮件|邮件地址|地址|住址|生日|名字"
        r"|微信号?|QQ号?|血型)(?:是|：|:|叫)",
        0.9,
        0.75,
        _F,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"我叫", 0.9, 0.75, _F),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"我(?:今年)?(?:\d{1,3}|[一二三四五六七八九十两]{1,3})岁",
        0.85,
        0.6,
        _F,
        needs_object=None,
    ),
    # The project.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"(?:我们的|我的|这个)(?:项目|服务|后端|前端|应用|网站|机器人|服务器|数据库|仓库|代码库|集群"
        r"|团队|公司|系统)(?:是用|用的是|使用|运行在|部署在|基于|依赖)",
        0.8,
        0.7,
        _F,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"我们(?:用的是|在用|使用)", 0.7, 0.6, _F),
    # Decisions.
    statement_rule(
        ItemType.DECISION,
        r"(?:我们|我|咱们)(?:已经|最终|最后|终于|还是)?(?:决定|确定|选择了|选定了?|商量好了?"
        r"|说好了?)|(?:我们|咱们)(?:就|将|会|要)(?:用|使用|采用|改用|换成|迁移到)"
        r"|让我们(?:用|使用|采用|选)",
        0.85,
        0.75,
        "decision",
    ),
    statement_rule(
        ItemType.DECISION,
        r"(?:我们|咱们)就?(?:用|使用|采用|选)[^，。,]{1,20}?吧",
        0.85,
        0.75,
        "decision",
        needs_object=None,
    ),
    # Task state.
    statement_rule(ItemType.TASK_STATE, r"我正在(?:做|写|开发|搞|修|准备)", 0.8, 0.6, "task"),
    statement_rule(ItemType.TASK_STATE, r"我(?:打算|计划|准备)", 0.8, 0.55, "task"),
)

_FROM_NOW_ON = r"(?:今后|从现在开始|从现在起|从今以后|以后)"
# "From now on" may come first, as in English ("从现在开始，不要用表情符号").
_LEAD = (
    r"^(?:请|记住|记得|注意|另外|还有|今后|从现在开始|从现在起|从今以后|以后)?[，,：:]?\s*(?:请)?"
)

CHINESE_RULES = LanguageRules(
    code=CHINESE,
    personal=PERSONAL,
    constraint_strong=re.compile(
        r"从现在(?:开始|起)|从今以后|以后(?:都|一律|永远|请)|禁止|不允许|不得|必须(?!的)|务必|严禁"
    ),
    constraint_order=re.compile(
        _LEAD + r"(?:(?:永远不要|永远别|千万不要|千万别|绝对不要|绝对不能|绝不要|不要|别|不许|不准"
        r"|一定要|只用|只能用|只使用|只能|一律)(?!担心|着急|客气|难过|怕|害怕|伤心|紧张|介意|在意"
        r"|放弃|急|走|哭|生气|紧|提|这样|那样|谢)|(?:总是|始终|永远)(?:[^，。,]{1,4}?地)?"
        # "请总是简短地回答我": how, then the verb.
        r"(?:用|使用|回答|回复|写|先"
        r"|检查|运行|提醒|说|加|带)"
        # As in the other languages, "from now on" and an order of answering, no subject
        # between ("从现在开始，请用简短的要点回答"; "以后我在家工作" states a fact).
        # "以后用电脑工作" says how the speaker works: "用" only with a verb of answering.
        r"|^(?:请)?" + _FROM_NOW_ON + r"[，,：:]?\s*(?:请|要|都|一律)*"
        r"(?:(?:只|只能)?(?:用|使用)[^，。,]{1,20}?)?(?:回答|回复|答复))"
    ),
    constraint_soft=re.compile(
        r"我们(?:总是|始终|从不|必须|一定要|不能)|(?:每个|所有|每次)[^，。]{1,8}?(?:都要|都必须|都得|必须)"
    ),
    not_constraint=re.compile(
        r"我(?!们)(?:必须|得|需要|一定要)|你(?:一定|必须|得)要?(?:试试|尝尝|去|看看|来)"
        r"|^(?:不要紧|别客气|不客气|别担心|不要担心)"
    ),
    question=re.compile(
        r"[吗呢么][\s~～…]*$|什么|为什么|怎么|怎样|哪里|哪儿|哪个|哪些|谁|几(?:个|点|岁|号|天)|多少"
        r"|是不是|有没有|能不能|可不可以|会不会|要不要|对不对|好不好|行不行"
    ),
    hedge=re.compile(
        r"也许|可能|大概|或许|好像|似乎|我觉得|我想|我猜|应该是|不确定|不太确定|有时候|有时|偶尔|以前"
        r"|曾经|说不定|估计|貌似"
    ),
    hypothetical=re.compile(r"^(?:如果|假如|要是|假设|万一|想象|若是|倘若|即使|就算)"),
    fillers=frozenset(
        "的了吗呢啊吧呀哦哈嗯是在和也都很就还又我你他她它们这那个些一不有没着过得地把被让给对跟与"
        "及或而但所以为于之其此么真好太最更非常特别超挺蛮"
    ),
    deictic=word_set("它 这 那 你 您 他 她 这个 那个 这些 那些 这样 那样 这里 那里 大家"),
    leading=word_set("很 非常 特别 真的 超级 超 也 还 都 挺 蛮 一直"),
    small_talk=word_set(
        "你好 您好 谢谢 谢谢你 谢谢您 多谢 感谢 好的 好 嗯 嗯嗯 哦 噢 哈哈 哈哈哈 "
        "呵呵 再见 拜拜 早上好 早安 晚安 晚上好 下午好 中午好 没问题 对 对的 是的 行 "
        "可以 明白 明白了 知道了 收到 不客气 太好了 真棒 厉害 酷 辛苦了 哇 加油 好吧 "
        "好啊 没事 没关系 当然 了 啊 呀 吧 的 你 您 太"
    ),
    cjk=True,
)
