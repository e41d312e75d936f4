"""Scripted chats for `mnemobot bench chat-tokens`: English, Russian and Chinese, 30 turns each.

A chat is a list of steps: a turn (what the user says, what the fake model answers, and,
for a question about something said before the last `/new`, the words the system prompt
must hold for memory to have done its job), or `NEW` (the user starts a new conversation:
what came before is no longer in the request, only in memory).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    reply: str
    # For a recall question: a phrase the memory part of the system prompt must contain.
    expects: str | None = None


NEW = "/new"
Step = Turn | str

ENGLISH: list[Step] = [
    Turn("hi", "Hi! How can I help?"),
    Turn("I'm planning a trip to Lisbon in May with my sister Clara.", "Lovely! What do you need?"),
    Turn("We booked the Casa Azul hotel near Rua Augusta.", "Great choice, central and quiet."),
    Turn(
        "Clara is vegetarian, so restaurants need good veggie options.", "Noted: veggie-friendly."
    ),
    Turn(
        "Can you suggest three restaurants in Baixa?",
        "Try Ao 26, Jardim das Cerejas, Orelha Negra.",
    ),
    Turn("thanks!", "You're welcome!"),
    Turn(
        "I prefer walking over taxis when it's under 30 minutes.", "Got it, walking routes first."
    ),
    Turn("How far is Belém from Baixa on foot?", "About 1h30; take tram 15 instead."),
    Turn("ok", "Anything else?"),
    Turn("My flight lands at 9:40 on May 12, TAP flight TP1351.", "Noted, arrival May 12 at 9:40."),
    Turn(
        "What's the best way from the airport to Casa Azul?",
        "The metro red then green line, ~35 min.",
    ),
    Turn("Our budget is about 120 euros a day for the two of us.", "That works well for Lisbon."),
    Turn("👍", "😊"),
    Turn("I'm allergic to shellfish, remember that.", "I'll remember: no shellfish."),
    Turn("Is the Oceanarium worth it?", "Yes, plan two hours; buy tickets online."),
    Turn("We also want a day trip to Sintra on May 14.", "Take the train from Rossio, 40 min."),
    Turn("great, thanks a lot", "Enjoy the planning!"),
    Turn("I work as a nurse at the St. Mary clinic, so I need to be back by May 18.", "Noted."),
    NEW,
    Turn("hi again", "Hello!"),
    Turn("Which hotel did we book in Lisbon?", "The Casa Azul near Rua Augusta.", "Casa Azul"),
    Turn("When does my flight land?", "May 12 at 9:40.", "9:40"),
    Turn("What food should I avoid?", "Shellfish.", "shellfish"),
    Turn("ok thanks", "Anytime."),
    Turn("What did we plan for May 14?", "A day trip to Sintra.", "Sintra"),
    Turn("Who am I travelling with?", "Your sister Clara.", "Clara"),
    Turn("What's our daily budget?", "About 120 euros.", "120"),
    Turn("👌", "👍"),
    Turn("Where do I work again?", "At the St. Mary clinic, as a nurse.", "St. Mary"),
    Turn("thanks, bye!", "Bye!"),
]

RUSSIAN: list[Step] = [
    Turn("привет", "Привет! Чем помочь?"),
    Turn("Я переезжаю в Казань в марте вместе с мужем Андреем.", "Здорово! Что нужно?"),
    Turn("Мы сняли квартиру на улице Баумана, дом 12.", "Отличный район."),
    Turn("У Андрея аллергия на кошек, так что соседей с кошками избегаем.", "Учту."),
    Turn(
        "Посоветуй три кафе рядом с Бауманской.",
        "Попробуйте «Дом татарской кулинарии», «Чак-чак», «Тюбетей».",
    ),
    Turn("спасибо", "Пожалуйста!"),
    Turn("Я работаю программистом в компании Ак Барс Цифровые Технологии.", "Запомнил."),
    Turn("Сколько ехать от Баумана до Кремля пешком?", "Минут пятнадцать."),
    Turn("ок", "Что-нибудь ещё?"),
    Turn("Грузовик с вещами приедет 3 марта в 10 утра.", "Записал: 3 марта, 10:00."),
    Turn("Какой интернет-провайдер лучше в центре Казани?", "Обычно берут Таттелеком или Дом.ру."),
    Turn("Бюджет на ремонт — 200 тысяч рублей.", "Понял, 200 тысяч."),
    Turn("👍", "😊"),
    Turn("Запомни: по пятницам у меня теннис в 19:00.", "Запомнил: теннис по пятницам."),
    Turn("Стоит ли сходить в театр Камала?", "Да, там есть спектакли с переводом."),
    Turn("Ещё хотим съездить в Свияжск 8 марта.", "Туда ходит метеор или автобус."),
    Turn("отлично, спасибо большое", "Рад помочь!"),
    Turn("Нашу собаку зовут Жужа, ей 4 года.", "Привет Жуже!"),
    NEW,
    Turn("привет ещё раз", "Здравствуйте!"),
    Turn("На какой улице наша квартира?", "На улице Баумана, дом 12.", "Баумана"),
    Turn("Когда приедет грузовик?", "3 марта в 10 утра.", "3 марта"),
    Turn("У кого аллергия и на что?", "У Андрея, на кошек.", "кош"),
    Turn("ок, спасибо", "Пожалуйста."),
    Turn("Куда мы собирались поехать 8 марта?", "В Свияжск.", "Свияжск"),
    Turn("Как зовут нашу собаку?", "Жужа.", "Жужа"),
    Turn("Какой бюджет на ремонт?", "200 тысяч рублей.", "200"),
    Turn("👌", "👍"),
    Turn("Где я работаю?", "В Ак Барс Цифровые Технологии.", "Ак Барс"),
    Turn("спасибо, пока!", "Пока!"),
]

CHINESE: list[Step] = [
    Turn("你好", "你好！有什么可以帮你？"),
    Turn("我下个月要和我妈妈一起去成都旅游。", "太好了！需要什么帮助？"),
    Turn("我们订了春熙路附近的锦江宾馆。", "位置很方便。"),
    Turn("我妈妈不能吃辣，请记住。", "好的，记住了：不吃辣。"),
    Turn("推荐三家不辣的川菜馆吧。", "可以试试陈麻婆的清汤系列、钟水饺和龙抄手。"),
    Turn("谢谢", "不客气！"),
    Turn("我是一名中学数学老师，在杭州工作。", "记住了。"),
    Turn("从宾馆到宽窄巷子要多久？", "打车大约二十分钟。"),
    Turn("好的", "还有别的吗？"),
    Turn("我们的航班是国航CA4507，十月五号上午十点到。", "记下了：十月五号十点到达。"),
    Turn("去大熊猫基地最好几点出发？", "早上七点半左右，熊猫上午最活跃。"),
    Turn("我们每天的预算大概八百元。", "这个预算在成都很充足。"),
    Turn("👍", "😊"),
    Turn("我对花生过敏，记住这个。", "记住了：花生过敏。"),
    Turn("都江堰值得去吗？", "值得，可以和青城山一起安排一天。"),
    Turn("我们还想十月八号去乐山看大佛。", "从成都东站坐高铁一小时。"),
    Turn("太好了，非常感谢", "祝旅途愉快！"),
    Turn("我家的猫叫豆豆，出门期间邻居帮忙照顾。", "好的。"),
    NEW,
    Turn("你好呀", "你好！"),
    Turn("我们订的是哪家宾馆？", "春熙路附近的锦江宾馆。", "锦江宾馆"),
    Turn("我们的航班什么时候到？", "十月五号上午十点。", "十月五号"),
    Turn("我对什么过敏？", "花生。", "花生"),
    Turn("好的谢谢", "不客气。"),
    Turn("十月八号我们打算去哪里？", "乐山看大佛。", "乐山"),
    Turn("我家的猫叫什么名字？", "豆豆。", "豆豆"),
    Turn("我们每天的预算是多少？", "大概八百元。", "八百"),
    Turn("👌", "👍"),
    Turn("我在哪里工作？", "在杭州当中学数学老师。", "杭州"),
    Turn("谢谢，再见！", "再见！"),
]

CHATS: dict[str, list[Step]] = {"en": ENGLISH, "ru": RUSSIAN, "zh": CHINESE}

# The turns that are small talk (a greeting, thanks, "ok", an emoji): memory has nothing
# to add to them, so what they get is pure cost.
SMALL_TALK = frozenset(
    {"hi", "thanks!", "ok", "👍", "great, thanks a lot", "hi again", "ok thanks", "👌"}
    | {"thanks, bye!", "привет", "спасибо", "ок", "отлично, спасибо большое", "привет ещё раз"}
    | {"ок, спасибо", "спасибо, пока!", "你好", "谢谢", "好的", "太好了，非常感谢", "你好呀"}
    | {"好的谢谢", "谢谢，再见！"}
)
